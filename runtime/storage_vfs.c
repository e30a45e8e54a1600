/* The storage VFS (see storage_vfs.h): the default VFS with each connection's WAL writes
 * gathered until SQLite syncs them.
 *
 * The VFS is a copy of the base VFS with its own xOpen. Journals and temporary files are the
 * base VFS's own file objects; the main database and its WAL are wrapped (struct wrapped, the
 * base's file object right behind it): the WAL to gather its writes, the main database to
 * catch the shared-memory barrier at which SQLite publishes a commit and to start the
 * writeback of what checkpoints copy into it as they go. */
#define _GNU_SOURCE /* sync_file_range */
#include "runtime/storage_vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "runtime/log.h"

/* Gathered bytes at most before they are written anyway (about 30 frames of 4 KiB pages).
 * The unix VFS writes at most 0x1ffff bytes per call (it masks the length to 17 bits), so one
 * write of the gathered bytes must stay below 128 KiB. Allocated at a connection's first WAL
 * write. */
#define GATHER_CAP ((size_t)120 * 1024)

struct wrapped {
    sqlite3_file base; /* our methods */
    sqlite3_file *real; /* the base VFS's file, right behind this struct */
    /* WAL files only: the gathered bytes are file bytes [at, at + len). */
    unsigned char *buf;
    sqlite3_int64 at;
    size_t len;
    bool direct; /* committed without a sync once: write straight through from then on */
    int failed;  /* a write-out that failed, not yet told to SQLite */
    /* The file's name, and a descriptor of the same file of our own (own_fd; -1 until its
     * first use): the WAL's fdatasyncs it for storage_vfs_sync, the main database's starts its
     * writeback. */
    const char *name;
    int fd;
    /* The main database: bytes written since its writeback was last started. */
    size_t unflushed;
    bool restarted; /* the header was written since the last real sync (the WAL starts over) */
};

static sqlite3_vfs vfs;
static sqlite3_vfs *base_vfs;
static const sqlite3_io_methods wal_methods, db_methods;

/* The WAL file with gathered bytes on this thread, if any. A connection is used by one thread
 * at a time, and SQLite writes a commit's frames and publishes it within one call; whatever
 * happens, the bytes are written out by the end of the write transaction (db_shm_lock), so
 * this never points past it at a file another thread might close. */
static _Thread_local struct wrapped *pending;

#ifdef TREASURY_TEST_HOOKS
static atomic_ulong real_syncs; /* WAL syncs passed to the base VFS */
static atomic_ulong writebacks; /* writebacks of the main database started */

unsigned long storage_vfs_real_syncs(void)
{
    return atomic_load(&real_syncs);
}

unsigned long storage_vfs_writebacks(void)
{
    return atomic_load(&writebacks);
}
#endif

/* storage_vfs_defer_syncs on this thread, and the WAL whose sync it last deferred. */
static _Thread_local bool defer;
static _Thread_local struct wrapped *deferred;

#define REAL(f) (((struct wrapped *)(void *)(f))->real)

/* Writes the gathered bytes out. A failure is also kept in the file, so that it reaches
 * SQLite at that file's next call even when the write-out happened elsewhere (at a lock or
 * for another connection of the thread). */
static int flush(struct wrapped *w)
{
    if (pending == w)
        pending = NULL;
    if (w->len == 0)
        return SQLITE_OK;
    size_t len = w->len;
    w->len = 0;
    int rc = w->real->pMethods->xWrite(w->real, w->buf, (int)len, w->at);
    if (rc != SQLITE_OK)
        w->failed = rc;
    return rc;
}

/* flush() for the WAL file's own calls: the first failure not yet told to SQLite, if any. */
static int write_out(struct wrapped *w)
{
    flush(w);
    int rc = w->failed;
    w->failed = SQLITE_OK;
    return rc;
}

/* ---- the WAL file ---------------------------------------------------------------------- */

/* w's own descriptor of its file, opened by name at the first call; -1 when it cannot be. */
static int own_fd(struct wrapped *w)
{
    if (w->fd < 0 && w->name)
        w->fd = open(w->name, O_RDONLY | O_CLOEXEC);
    return w->fd;
}

static void close_own_fd(struct wrapped *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
}

static int wal_close(sqlite3_file *f)
{
    struct wrapped *w = (struct wrapped *)(void *)f;
    int rc = write_out(w);
    int rc2 = w->real->pMethods->xClose(w->real);
    free(w->buf);
    w->buf = NULL;
    close_own_fd(w);
    if (deferred == w)
        deferred = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int wal_read(sqlite3_file *f, void *out, int n, sqlite3_int64 off)
{
    struct wrapped *w = (struct wrapped *)(void *)f;
    if (w->failed || (w->len > 0 && off < w->at + (sqlite3_int64)w->len && off + n > w->at)) {
        int rc = write_out(w);
        if (rc != SQLITE_OK)
            return rc;
    }
    return w->real->pMethods->xRead(w->real, out, n, off);
}

static int wal_write(sqlite3_file *f, const void *data, int n, sqlite3_int64 off)
{
    struct wrapped *w = (struct wrapped *)(void *)f;
    size_t size = (size_t)n;
    if (off == 0)
        w->restarted = true;
    if (w->failed)
        return write_out(w);
    if (w->len > 0) {
        sqlite3_int64 end = w->at + (sqlite3_int64)w->len;
        if (off >= w->at && off + n <= end) { /* a frame of this commit written again */
            memcpy(w->buf + (off - w->at), data, size);
            return SQLITE_OK;
        }
        if (off == end && w->len + size <= GATHER_CAP) {
            memcpy(w->buf + w->len, data, size);
            w->len += size;
            return SQLITE_OK;
        }
        int rc = write_out(w);
        if (rc != SQLITE_OK)
            return rc;
    }
    if (w->direct || size >= GATHER_CAP)
        return w->real->pMethods->xWrite(w->real, data, n, off);
    if (!w->buf && !(w->buf = malloc(GATHER_CAP)))
        return w->real->pMethods->xWrite(w->real, data, n, off);
    if (pending && pending != w)
        flush(pending); /* another connection of this thread: out first (a failure is its) */
    memcpy(w->buf, data, size);
    w->at = off;
    w->len = size;
    pending = w;
    return SQLITE_OK;
}

static int wal_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    int rc = write_out((struct wrapped *)(void *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xTruncate(REAL(f), size);
}

/* The frames are written out here, so a failed write still fails the commit. A deferred sync
 * stops there. Two syncs stay real: a file's first (through the base VFS, which also syncs the
 * directory of a WAL it created), after which the descriptor storage_vfs_sync uses is opened,
 * and the sync of a new header when the WAL starts over, which SQLite makes durable before
 * the first frames of the new generation. */
static int wal_sync(sqlite3_file *f, int flags)
{
    struct wrapped *w = (struct wrapped *)(void *)f;
    int rc = write_out(w);
    if (rc != SQLITE_OK)
        return rc;
    if (defer && w->fd >= 0 && !w->restarted) {
        deferred = w;
        return SQLITE_OK;
    }
    if (defer)
        own_fd(w); /* opened for the next one; on failure never deferred */
    rc = REAL(f)->pMethods->xSync(REAL(f), flags);
    if (rc == SQLITE_OK)
        w->restarted = false;
#ifdef TREASURY_TEST_HOOKS
    atomic_fetch_add(&real_syncs, 1);
#endif
    return rc;
}

static int wal_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    int rc = write_out((struct wrapped *)(void *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int wal_file_control(sqlite3_file *f, int op, void *arg)
{
    int rc = write_out((struct wrapped *)(void *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

/* ---- the main database file: two shared-memory calls write out first ------------------ */

/* Bytes still gathered when a lock is let go belong to a write transaction that ended without
 * a commit (rolled back after SQLite spilled pages to the WAL): written out as SQLite would
 * have written them, so nothing stays gathered past the transaction that wrote it. */
static int db_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    int rc = REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
    if (pending && (flags & SQLITE_SHM_UNLOCK))
        flush(pending); /* a failure is kept for that file's next call */
    return rc;
}

static void db_shm_barrier(sqlite3_file *f)
{
    struct wrapped *w = pending;
    if (w) {
        /* A commit is being published without its WAL synced (synchronous below FULL): its
         * frames must be in the file before any reader looks for them. */
        w->direct = true;
        if (flush(w) != SQLITE_OK) {
            log_error("storage: cannot write the WAL of a commit being published; stopping "
                      "rather than let readers see frames that are not there");
            abort();
        }
    }
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}

/* Starts the writeback of what a checkpoint copies into the database every WRITEBACK_EVERY
 * bytes, as PostgreSQL's checkpoint_flush_after does: otherwise the checkpoint's closing fsync
 * flushes its 8 MiB at once, on the disk where the group commit fsyncs the WAL (whose fsyncs
 * took 3-14 ms instead of 0.7 around checkpoints, about 40 a second under POST -c64). Started
 * this way, POST -c64's p99 was 15.4-17.0 ms in 6 of 7 A/B rounds, against 17.9-24.1 ms.
 * Advice only (SYNC_FILE_RANGE_WRITE waits for nothing and guarantees nothing): durability
 * stays with the checkpoint's fsync, and a failure is ignored. */
#define WRITEBACK_EVERY ((size_t)1 << 20)

static int db_write(sqlite3_file *f, const void *data, int n, sqlite3_int64 off)
{
    struct wrapped *w = (struct wrapped *)(void *)f;
    int rc = REAL(f)->pMethods->xWrite(REAL(f), data, n, off);
    if (rc != SQLITE_OK || n <= 0)
        return rc;
    w->unflushed += (size_t)n;
    if (w->unflushed < WRITEBACK_EVERY)
        return rc;
    w->unflushed = 0;
    int fd = own_fd(w);
    if (fd < 0 || sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) != 0)
        return rc;
#ifdef TREASURY_TEST_HOOKS
    atomic_fetch_add(&writebacks, 1);
#endif
    return rc;
}

static int db_close(sqlite3_file *f)
{
    close_own_fd((struct wrapped *)(void *)f);
    return REAL(f)->pMethods->xClose(REAL(f));
}

/* ---- passed on unchanged: the rest of the main database's calls and of the WAL's -------- */

static int any_read(sqlite3_file *f, void *out, int n, sqlite3_int64 off)
{
    return REAL(f)->pMethods->xRead(REAL(f), out, n, off);
}

static int any_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int any_sync(sqlite3_file *f, int flags)
{
    return REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int any_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int any_file_control(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int any_lock(sqlite3_file *f, int lock)
{
    return REAL(f)->pMethods->xLock(REAL(f), lock);
}

static int any_unlock(sqlite3_file *f, int lock)
{
    return REAL(f)->pMethods->xUnlock(REAL(f), lock);
}

static int any_check_reserved_lock(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int any_sector_size(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int any_device_characteristics(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int any_shm_map(sqlite3_file *f, int page, int size, int extend, void volatile **out)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), page, size, extend, out);
}

static int any_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}


static void any_shm_barrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int any_shm_unmap(sqlite3_file *f, int delete_flag)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), delete_flag);
}

static int any_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **out)
{
    return REAL(f)->pMethods->xFetch(REAL(f), off, n, out);
}

static int any_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods wal_methods = {
    3,
    wal_close,
    wal_read,
    wal_write,
    wal_truncate,
    wal_sync,
    wal_file_size,
    any_lock,
    any_unlock,
    any_check_reserved_lock,
    wal_file_control,
    any_sector_size,
    any_device_characteristics,
    any_shm_map,
    any_shm_lock,
    any_shm_barrier,
    any_shm_unmap,
    any_fetch,
    any_unfetch,
};

static const sqlite3_io_methods db_methods = {
    3,
    db_close,
    any_read,
    db_write,
    any_truncate,
    any_sync,
    any_file_size,
    any_lock,
    any_unlock,
    any_check_reserved_lock,
    any_file_control,
    any_sector_size,
    any_device_characteristics,
    any_shm_map,
    db_shm_lock,
    db_shm_barrier,
    any_shm_unmap,
    any_fetch,
    any_unfetch,
};

/* ---- the VFS --------------------------------------------------------------------------- */

static int vfs_open(sqlite3_vfs *self, sqlite3_filename name, sqlite3_file *f, int flags,
                    int *out_flags)
{
    (void)self;
    const sqlite3_io_methods *methods = (flags & SQLITE_OPEN_WAL)       ? &wal_methods
                                        : (flags & SQLITE_OPEN_MAIN_DB) ? &db_methods
                                                                        : NULL;
    if (!methods) /* journals, temporary files: the base VFS's own */
        return base_vfs->xOpen(base_vfs, name, f, flags, out_flags);
    struct wrapped *w = (struct wrapped *)(void *)f;
    memset(w, 0, sizeof *w);
    w->real = (sqlite3_file *)(void *)(w + 1);
    w->fd = -1;
    w->name = name; /* SQLite keeps it valid until xClose */
    int rc = base_vfs->xOpen(base_vfs, name, w->real, flags, out_flags);
    if (rc != SQLITE_OK || !w->real->pMethods) {
        /* SQLite calls xClose only when pMethods is set; close what the base left open. */
        if (w->real->pMethods)
            w->real->pMethods->xClose(w->real);
        w->base.pMethods = NULL;
        return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
    }
    w->base.pMethods = methods;
    return SQLITE_OK;
}

int storage_vfs_register(const char *base)
{
    if (sqlite3_vfs_find(STORAGE_VFS))
        return SQLITE_OK;
    sqlite3_vfs *b = sqlite3_vfs_find(base);
    if (!b)
        return SQLITE_NOTFOUND;
    base_vfs = b;
    vfs = *b; /* the base's own calls for everything but xOpen, with its pAppData */
    vfs.szOsFile = (int)sizeof(struct wrapped) + b->szOsFile;
    vfs.pNext = NULL;
    vfs.zName = STORAGE_VFS;
    vfs.xOpen = vfs_open;
    return sqlite3_vfs_register(&vfs, 0);
}

bool storage_vfs_defer_syncs(bool on)
{
    bool was = defer;
    defer = on;
    return was;
}

void *storage_vfs_take_deferred(void)
{
    struct wrapped *w = deferred;
    deferred = NULL;
    return w;
}

int storage_vfs_sync(void *wal)
{
    struct wrapped *w = wal;
    int rc;
    do
        rc = fdatasync(w->fd);
    while (rc != 0 && errno == EINTR);
    return rc;
}
