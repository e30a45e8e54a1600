/* Durable file writes for what the server keeps beside its database (keys, the certificate,
 * the mail spool): whole writes, fsync of the data and of the directory entry, and a file
 * that appears whole or not at all (written aside, then renamed into place). */
#ifndef RUNTIME_FILE_H
#define RUNTIME_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all n bytes to fd (retrying short writes and EINTR). 0 / -1 with errno. */
int file_write_all(int fd, const void *buf, size_t n);
/* Makes the directory's entries (a file created or renamed in it) durable. 0 / -1 with errno. */
int file_sync_dir(const char *dir);
/* Writes data to a new <dir>/.<name>.XXXXXX with mode (0600 from the start, so it is never
 * briefly readable), fsyncs it and leaves its path in tmp (tmplen bytes) for the caller to
 * rename. 0, or -1 with a message in err (tmp then names nothing left to remove when empty). */
int file_write_temp(const char *dir, const char *name, const char *data, size_t len, mode_t mode,
                    char *tmp, size_t tmplen, char *err, size_t errlen);
/* <dir>/<name> replaced by data whole: file_write_temp, rename, file_sync_dir. 0 / -1 with a
 * message in err (nothing is left behind). */
int file_replace(const char *dir, const char *name, const char *data, size_t len, mode_t mode,
                 char *err, size_t errlen);

#endif
