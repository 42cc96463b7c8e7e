/*
 * What the floor client (floor.c) and the io_uring probe (uring_probe.c) share: a failure as
 * one line on stderr with exit status 1, and the one thing either reads of an answer, its
 * length. The includer defines PROG, its name for the failure line, first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void die(const char *what) {
    fprintf(stderr, PROG ": %s\n", what);
    exit(1);
}

/*
 * The length of the answer whose first got bytes are in buf (NUL-terminated): its head and its
 * Content-Length body; 0 while the head is incomplete.
 */
static size_t answer_length(const char *buf) {
    const char *end = strstr(buf, "\r\n\r\n");
    if (!end)
        return 0;
    for (const char *p = buf; p < end; p++) {
        if (strncasecmp(p, "\r\ncontent-length:", 17) == 0)
            return (size_t)(end - buf) + 4 + strtoul(p + 17, NULL, 10);
    }
    die("an answer without Content-Length");
    return 0;
}
