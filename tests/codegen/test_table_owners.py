"""One owner per table (handlers/sql/README.md): every INSERT, UPDATE and DELETE of an API
table is in the one handler file the README names for it. A write from another file, a table
of the migrations missing from the README, or an owner that never writes its table fails."""
import glob
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')


def read(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as fh:
        return fh.read()


def owners():
    table = {}
    for line in read('handlers/sql/README.md').splitlines():
        m = re.match(r'^\|\s*([a-z]+)\s*\|\s*([a-z_]+)\s*\|\s*(handlers/[a-z_]+\.c)\s*\|$', line)
        if m:
            table[m.group(2)] = (m.group(1), m.group(3))
    return table


def migration_tables():
    found = {}
    for path in glob.glob(os.path.join(ROOT, 'handlers/sql/*/*.sql')):
        api = os.path.basename(os.path.dirname(path))
        for t in re.findall(r'CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)', read(path), re.I):
            found[t] = api
    return found


def sources():
    """Each C file of handlers/ and runtime/, adjacent string literals joined (SQL is split
    over lines), comments left out."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'handlers/*.c')) +
                       glob.glob(os.path.join(ROOT, 'runtime/*.c'))):
        text = read(os.path.relpath(path, ROOT))
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
        text = re.sub(r'"\s*\n\s*"', '', text)
        out[os.path.relpath(path, ROOT)] = text
    return out


def descriptors():
    """{table: rows_<schema>}: the generated x-table descriptors (runtime/resource.h)."""
    out = {}
    for path in glob.glob(os.path.join(ROOT, 'generated/rows_*.c')):
        text = read(os.path.relpath(path, ROOT))
        for m in re.finditer(r'const struct resource_table (rows_\w+) = \{\s*\.table = "(\w+)"',
                             text):
            out[m.group(2)] = m.group(1)
    return out


def writers(table, srcs, desc=None):
    """The files writing table: by its name in SQL, or through its descriptor desc
    (resource_insert / resource_save / resource_save_state / resource_save_singleton)."""
    pat = re.compile(r'\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+%s\b' % table, re.I)
    via = re.compile(r'\bresource_(insert|save|save_state|save_singleton)\([^;]*&%s\b'
                     % desc) if desc else None
    return sorted(f for f, text in srcs.items()
                  if pat.search(text) or (via and via.search(text)))


def test_every_api_table_has_an_owner_in_the_readme():
    listed, tables = owners(), migration_tables()
    assert sorted(tables) == sorted(listed), 'README and migrations disagree'
    for t, api in tables.items():
        assert listed[t][0] == api, t


def test_only_the_owner_writes_each_table():
    srcs, desc = sources(), descriptors()
    for t, (_, owner) in owners().items():
        assert writers(t, srcs, desc.get(t)) == [owner], t


def test_the_check_sees_a_write_from_another_file():
    """The scan itself: an UPDATE split over two literals in a second file is found."""
    srcs = {'handlers/a.c': 'x("UPDATE payments SET a = 1")',
            'handlers/b.c': 'x("UPDATE "\n  "payments SET b = 2") /* DELETE FROM payments */'}
    srcs = {f: re.sub(r'"\s*\n\s*"', '', re.sub(r'/\*.*?\*/', ' ', t, flags=re.S))
            for f, t in srcs.items()}
    assert writers('payments', srcs) == ['handlers/a.c', 'handlers/b.c']


def test_the_check_sees_a_write_through_a_descriptor():
    """resource_insert / resource_save with a table's generated descriptor write it."""
    srcs = {'handlers/a.c': 'resource_save(r, &rows_label, l);',
            'handlers/b.c': 'resource_load(r, &rows_label, id, l);',
            'handlers/c.c': 'resource_save_state(r, &rows_label, l);'}
    assert writers('labels', srcs, 'rows_label') == ['handlers/a.c', 'handlers/c.c']
