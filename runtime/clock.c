/* CLOCK_REALTIME, plus in test builds a shared, file-backed offset: the tests write the file
 * and the very next reading here sees it (one relaxed load, no system call). */
#include "runtime/clock.h"

#include <time.h>

#ifdef TREASURY_TEST_CLOCK
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static const int64_t *offset_s; /* mapped file, NULL until clock_init */

int clock_init(const char *data_dir)
{
    char path[1200];
    int64_t zero = 0;
    snprintf(path, sizeof path, "%s/test-clock-offset", data_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (lseek(fd, 0, SEEK_END) < (off_t)sizeof zero &&
        pwrite(fd, &zero, sizeof zero, 0) != (ssize_t)sizeof zero) {
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, sizeof zero, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    offset_s = m;
    return 0;
}

static int64_t offset_ns(void)
{
    return offset_s ? __atomic_load_n(offset_s, __ATOMIC_RELAXED) * INT64_C(1000000000) : 0;
}
#else
int clock_init(const char *data_dir)
{
    (void)data_dir;
    return 0;
}

static int64_t offset_ns(void)
{
    return 0;
}
#endif

int64_t clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * INT64_C(1000000000) + ts.tv_nsec + offset_ns();
}

int64_t clock_now_ms(void)
{
    return clock_now_ns() / 1000000;
}

int64_t clock_now_s(void)
{
    return clock_now_ns() / 1000000000;
}
