/* The SQLite VFS the server's connections open the database with (runtime/storage_vfs.c): the
 * default VFS, except that a connection's WAL writes are gathered in memory and reach the file
 * in one write when SQLite syncs the WAL at commit.
 *
 * SQLite appends a commit's frames to the WAL two writes each (a 24-byte frame header, then
 * the 4 KiB page), so a frame straddles file pages and the kernel's write path handles about
 * three page pieces per frame. Gathered, a commit of n frames is one write covering about n
 * pages. Nothing changes for durability: the frames are in the file before SQLite's fsync of
 * the commit, which is when they were durable before too, and before any other connection
 * can see the commit.
 *
 * A connection that commits without syncing (synchronous below FULL, such as housekeeping's)
 * has its frames written when SQLite publishes the commit to the other connections (the
 * shared-memory barrier of the WAL index) and its WAL writes go straight to the file from then
 * on. If that one write fails there is no way to report it, and readers would be shown frames
 * that are not in the file, so the process aborts (nothing of that commit was acknowledged).
 *
 * Deferred syncs (the group-commit writer, group_commit.h): a commit's sync writes the frames
 * out, so a failed write still fails the commit, but leaves the fsync to a later
 * storage_vfs_sync, on another thread. The commit is then visible to other connections before
 * it is durable; whoever defers must keep anything from acting on it before that fsync. Only a
 * commit's own syncs are deferred: a WAL's first sync, and the sync of the new header when the
 * WAL starts over (which SQLite makes durable before the new generation's frames), are real,
 * and so is a checkpoint's sync of the WAL before it copies frames into the database (storage.c
 * turns deferral off around the checkpoint it may run inside a commit).
 *
 * The main database: every MiB written to it (by checkpoints, which copy the WAL into it) starts
 * that file's writeback (sync_file_range), so the checkpoint's closing fsync has little left to
 * flush at once, beside the WAL's fsyncs on the same disk. It changes nothing for durability. */
#ifndef RUNTIME_STORAGE_VFS_H
#define RUNTIME_STORAGE_VFS_H

#include <stdbool.h>

/* The VFS's name, for sqlite3_open_v2. */
#define STORAGE_VFS "treasury"

/* Registers the VFS on top of base (NULL: SQLite's default VFS), not as the default. Once per
 * process; later calls do nothing. 0, or an SQLite error code. */
int storage_vfs_register(const char *base);

/* Defers this thread's WAL syncs (on) or not (off); returns the previous setting. A file's
 * first sync is never deferred. */
bool storage_vfs_defer_syncs(bool on);
/* The WAL whose sync this thread last deferred, NULL if none since the last call. It stays
 * valid until its connection closes. */
void *storage_vfs_take_deferred(void);
/* The deferred fsync (fdatasync) of that WAL, from any thread: 0, or -1 with errno. */
int storage_vfs_sync(void *wal);

#ifdef TREASURY_TEST_HOOKS
/* WAL syncs that reached the base VFS so far, all connections (for tests). */
unsigned long storage_vfs_real_syncs(void);
/* Writebacks of the main database started so far (for tests). */
unsigned long storage_vfs_writebacks(void);
#endif

#endif
