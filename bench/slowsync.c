/* A disk of fixed sync latency, for benchmarks on a shared machine (bench_main_job's
   BENCH_FSYNC_US): every fsync and fdatasync calls the real one, then sleeps FSYNC_DELAY_US
   microseconds. Put the stores on tmpfs and LD_PRELOAD this: each sync then costs what a
   disk's would, paid where a real one is (mnem's add waits with Python's GIL held), without
   the shared disk's noise. Built by the bench: cc -O2 -shared -fPIC -o slowsync.so slowsync.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static long delay_us = -1;

static void wait_as_a_disk(void) {
    if (delay_us < 0) {
        const char *set = getenv("FSYNC_DELAY_US");
        delay_us = set ? atol(set) : 0;
    }
    if (delay_us > 0) {
        struct timespec t = {delay_us / 1000000, (delay_us % 1000000) * 1000};
        nanosleep(&t, NULL);
    }
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    int done = real(fd);
    wait_as_a_disk();
    return done;
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int done = real(fd);
    wait_as_a_disk();
    return done;
}
