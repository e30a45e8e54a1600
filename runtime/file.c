/* Durable file writes (see file.h). */
#include "runtime/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int file_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int file_write_temp(const char *dir, const char *name, const char *data, size_t len, mode_t mode,
                    char *tmp, size_t tmplen, char *err, size_t errlen)
{
    int w = snprintf(tmp, tmplen, "%s/.%s.XXXXXX", dir, name);
    if (w < 0 || (size_t)w >= tmplen) {
        snprintf(err, errlen, "the path of %s in %s is too long", name, dir);
        tmp[0] = '\0';
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a file in %s: %s", dir, strerror(errno));
        tmp[0] = '\0';
        return -1;
    }
    if (fchmod(fd, mode) != 0 || file_write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        return -1;
    }
    if (close(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    return 0;
}

int file_replace(const char *dir, const char *name, const char *data, size_t len, mode_t mode,
                 char *err, size_t errlen)
{
    char tmp[4096], path[4096];
    int w = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= sizeof path) {
        snprintf(err, errlen, "the path of %s in %s is too long", name, dir);
        return -1;
    }
    if (file_write_temp(dir, name, data, len, mode, tmp, sizeof tmp, err, errlen) != 0) {
        if (tmp[0])
            unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (file_sync_dir(dir) != 0) {
        snprintf(err, errlen, "cannot sync directory %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}
