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
 * that are not in the file, so the process aborts (nothing of that commit was acknowledged). */
#ifndef RUNTIME_STORAGE_VFS_H
#define RUNTIME_STORAGE_VFS_H

/* The VFS's name, for sqlite3_open_v2. */
#define STORAGE_VFS "treasury"

/* Registers the VFS on top of base (NULL: SQLite's default VFS), not as the default. Once per
 * process; later calls do nothing. 0, or an SQLite error code. */
int storage_vfs_register(const char *base);

#endif
