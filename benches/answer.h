/*
 * What the floor client (floor.c) and the io_uring probe (uring_probe.c) share: a failure as
 * one line on stderr with exit status 1, the connection to HOST PORT (argv[1], argv[2]), and
 * the one thing either reads of an answer, its length. The includer defines PROG, its name for
 * the failure line, first.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static void die(const char *what) {
    fprintf(stderr, PROG ": %s\n", what);
    exit(1);
}

/* The IPv4 address HOST PORT, from their arguments. */
static struct sockaddr_in address_of(const char *host, const char *port) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        die("HOST must be an IPv4 address");
    return addr;
}

/* A TCP connection to addr, with TCP_NODELAY (the requests go as they are written). */
static int connect_to(const struct sockaddr_in *addr) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (const struct sockaddr *)addr, sizeof *addr) != 0)
        die("connect failed");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
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
