"""The tables as the migrations create them: CREATE TABLE, ALTER TABLE ... ADD COLUMN and DROP
TABLE of every API folder of the sql directory, both dialects, read into {dialect: {table:
{column: Column}}}, which codegen/rows.py checks each x-table mapping against."""
import os
import re


class Column:
    def __init__(self, name, not_null, default):
        self.name, self.not_null, self.default = name, not_null, default


def _statements(text):
    """The statements of a migration: comments dropped, split at the semicolons outside
    'quoted text'."""
    out, cur, quoted, i = [], [], False, 0
    while i < len(text):
        ch = text[i]
        if not quoted and text.startswith('--', i):
            i = text.find('\n', i)
            i = len(text) if i < 0 else i
            continue
        if ch == "'":
            quoted = not quoted
        if ch == ';' and not quoted:
            out.append(''.join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append(''.join(cur))
    return out


def _split_top(body):
    """Splits a CREATE TABLE body at the commas outside parentheses and quotes."""
    parts, depth, cur, quoted = [], 0, [], False
    for ch in body:
        if ch == "'":
            quoted = not quoted
        elif quoted:
            pass
        elif ch == '(':
            depth += 1
        elif ch == ')':
            depth -= 1
        if ch == ',' and depth == 0 and not quoted:
            parts.append(''.join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if ''.join(cur).strip():
        parts.append(''.join(cur).strip())
    return parts


def _column(defn):
    words = defn.split()
    if not words or words[0].upper() in ('UNIQUE', 'PRIMARY', 'CHECK', 'FOREIGN', 'CONSTRAINT'):
        return None
    rest = ' '.join(words[1:]).upper()
    return Column(words[0].strip('"'), 'NOT NULL' in rest or 'PRIMARY KEY' in rest,
                  'DEFAULT' in rest)


def parse_ddl(text, tables):
    """Applies one migration's CREATE TABLE / ALTER TABLE ... ADD COLUMN / DROP TABLE to
    tables ({name: {column: Column}}, in creation order)."""
    for stmt in _statements(text):
        s = stmt.strip()
        m = re.match(r'CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*)\)\s*'
                     r'(?:WITHOUT\s+ROWID)?\s*$', s, re.S | re.I)
        if m:
            cols = {}
            for d in _split_top(m.group(2)):
                c = _column(d)
                if c:
                    cols[c.name] = c
            tables[m.group(1)] = cols
            continue
        m = re.match(r'ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(.*)$', s, re.S | re.I)
        if m and m.group(1) in tables:
            c = _column(m.group(2))
            if c:
                tables[m.group(1)][c.name] = c
            continue
        m = re.match(r'DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)\s*$', s, re.I)
        if m:
            tables.pop(m.group(1), None)


def load_tables(sql_dir):
    """{dialect: {table: {column: Column}}} over every API folder of sql_dir."""
    out = {'sqlite': {}, 'pg': {}}
    if not sql_dir or not os.path.isdir(sql_dir):
        return out
    for api in sorted(os.listdir(sql_dir)):
        d = os.path.join(sql_dir, api)
        if not os.path.isdir(d):
            continue
        for dialect in out:
            for name in sorted(os.listdir(d)):
                # NNNN_name.<dialect>.sql, or NNNN_name.sql, which every engine runs
                # (codegen/embed_sql.py)
                portable = name.endswith('.sql') and name.count('.') == 1
                if portable or name.endswith('.%s.sql' % dialect):
                    with open(os.path.join(d, name), encoding='utf-8') as f:
                        parse_ddl(f.read(), out[dialect])
    return out
