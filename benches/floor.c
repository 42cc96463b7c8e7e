/*
 * The floor client of scripts/peers.sh: what the kernel charges a client for an HTTP/1.1 request
 * on loopback when the client itself does next to nothing. C blocking connections, one request
 * in flight on each; per round one write() of the request on every connection, then on each
 * connection read() until its answer is in. No event loop and no parsing beyond finding the end
 * of the head and its Content-Length (no status, no body check). One write and (on loopback, for
 * small answers) one read per request is the fewest syscalls a client can make, so its CPU per
 * request is the floor the peers table names.
 *
 * With DEPTH above 1 the connections are pipelined: per round one write() of DEPTH copies of the
 * request on every connection, then reads until its DEPTH answers are in (they come back to
 * back; one read takes several): the floor of a pipelining client.
 *
 *   floor HOST PORT CONNECTIONS REQUESTS REQUEST_FILE [DEPTH]
 *
 * Prints "N requests in S s, R req/s" on stdout. Any failure (connect, a failed write, a closed
 * connection, an answer without Content-Length) is one line on stderr and exit status 1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROG "floor"
#include "answer.h"

#define MAX_CONNS 1024
#define MAX_REQUEST 65536
#define MAX_ANSWER 65536

static void send_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n <= 0)
            die("write failed");
        buf += n;
        len -= (size_t)n;
    }
}

/*
 * Reads `depth` whole answers on fd, back to back: as many reads as it takes (one, on loopback,
 * for one small answer; pipelined, a read takes several).
 */
static void read_answers(int fd, char *buf, int depth) {
    size_t got = 0, at = 0, total = 0;
    int done = 0;
    while (done < depth) {
        if (at > 0) {
            /* the answers taken go; an incomplete one moves to the front */
            memmove(buf, buf + at, got - at);
            got -= at;
            at = 0;
            buf[got] = 0;
        }
        ssize_t n = read(fd, buf + got, MAX_ANSWER - 1 - got);
        if (n <= 0)
            die("the server closed a connection or a read failed");
        got += (size_t)n;
        buf[got] = 0;
        while (done < depth && (total = answer_length(buf + at)) != 0 && at + total <= got) {
            at += total;
            done++;
        }
        if (got - at >= MAX_ANSWER - 1)
            die("an answer longer than 64 KiB");
    }
    if (got > at)
        die("more answers came on a connection than requests went");
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7)
        die("usage: floor HOST PORT CONNECTIONS REQUESTS REQUEST_FILE [DEPTH]");
    int conns = atoi(argv[3]);
    long requests = atol(argv[4]);
    int depth = argc == 7 ? atoi(argv[6]) : 1;
    if (depth < 1 || depth > 256)
        die("DEPTH must be 1 to 256");
    if (conns < 1 || conns > MAX_CONNS || requests < (long)conns * depth)
        die("CONNECTIONS must be 1 to 1024 and REQUESTS at least CONNECTIONS x DEPTH");
    static char request[MAX_REQUEST];
    FILE *f = fopen(argv[5], "rb");
    if (!f)
        die("cannot open REQUEST_FILE");
    size_t req_len = fread(request, 1, sizeof request, f);
    fclose(f);
    if (req_len == 0 || req_len == sizeof request)
        die("REQUEST_FILE is empty or longer than 64 KiB");
    /* DEPTH copies, written with one call */
    char *batch = malloc(req_len * (size_t)depth);
    if (!batch)
        die("out of memory");
    for (int d = 0; d < depth; d++)
        memcpy(batch + req_len * (size_t)d, request, req_len);
    size_t batch_len = req_len * (size_t)depth;

    struct sockaddr_in addr = address_of(argv[1], argv[2]);
    static int fds[MAX_CONNS];
    for (int i = 0; i < conns; i++)
        fds[i] = connect_to(&addr);
    static char answer[MAX_ANSWER];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long done = 0;
    while (done + (long)conns * depth <= requests) {
        for (int i = 0; i < conns; i++)
            send_all(fds[i], batch, batch_len);
        for (int i = 0; i < conns; i++)
            read_answers(fds[i], answer, depth);
        done += (long)conns * depth;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%ld requests in %.3f s, %.0f req/s\n", done, secs, (double)done / secs);
    for (int i = 0; i < conns; i++)
        close(fds[i]);
    free(batch);
    return 0;
}
