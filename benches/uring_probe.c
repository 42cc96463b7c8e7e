/*
 * A probe, not part of any script: the floor client's closed loop (benches/floor.c) over
 * io_uring instead of blocking sockets, to measure what a completion-based client would pay
 * the kernel on loopback. N connections, one request in flight on each; a request is a send
 * linked to a recv (IOSQE_IO_LINK, the send's success not reported), and one
 * io_uring_submit_and_wait() per batch submits every request the last completions freed and
 * waits for the next. No parsing beyond the answer's Content-Length, as in floor.c.
 *
 *   cc -O2 -o uring_probe benches/uring_probe.c -luring      (Debian: liburing-dev)
 *   uring_probe HOST PORT CONNECTIONS REQUESTS REQUEST_FILE [defer]
 *
 * `defer` sets up the ring with IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN
 * (Linux 6.1+): completions are then run in the submitter's io_uring_enter, not by task work
 * signalled to it. Prints "N requests in S s, R req/s"; any failure is one line on stderr and
 * exit status 1.
 */
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROG "uring_probe"
#include "answer.h"

#define MAX_CONNS 1024
#define MAX_ANSWER 65536

static char request[65536];
static size_t req_len;
static int fds[MAX_CONNS];
static char *bufs[MAX_CONNS];
static size_t got[MAX_CONNS];

/* user_data: the connection's index << 1, | 1 for its recv */
static void queue_request(struct io_uring *ring, int i) {
    struct io_uring_sqe *s = io_uring_get_sqe(ring);
    if (!s)
        die("no sqe");
    io_uring_prep_send(s, fds[i], request, req_len, MSG_NOSIGNAL);
    s->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
    s->user_data = (uint64_t)i << 1;
    struct io_uring_sqe *r = io_uring_get_sqe(ring);
    if (!r)
        die("no sqe");
    got[i] = 0;
    io_uring_prep_recv(r, fds[i], bufs[i], MAX_ANSWER - 1, 0);
    r->user_data = ((uint64_t)i << 1) | 1;
}

static void queue_recv(struct io_uring *ring, int i) {
    struct io_uring_sqe *r = io_uring_get_sqe(ring);
    if (!r)
        die("no sqe");
    io_uring_prep_recv(r, fds[i], bufs[i] + got[i], MAX_ANSWER - 1 - got[i], 0);
    r->user_data = ((uint64_t)i << 1) | 1;
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7)
        die("usage: uring_probe HOST PORT CONNECTIONS REQUESTS REQUEST_FILE [defer]");
    int conns = atoi(argv[3]);
    long requests = atol(argv[4]);
    if (conns < 1 || conns > MAX_CONNS || requests < conns)
        die("CONNECTIONS must be 1 to 1024 and REQUESTS at least CONNECTIONS");
    if (argc == 7 && strcmp(argv[6], "defer") != 0)
        die("the sixth argument, when given, is defer");
    FILE *f = fopen(argv[5], "rb");
    if (!f)
        die("cannot open REQUEST_FILE");
    req_len = fread(request, 1, sizeof request, f);
    fclose(f);
    if (req_len == 0 || req_len == sizeof request)
        die("REQUEST_FILE is empty or longer than 64 KiB");
    struct sockaddr_in addr = address_of(argv[1], argv[2]);
    for (int i = 0; i < conns; i++) {
        fds[i] = connect_to(&addr);
        bufs[i] = malloc(MAX_ANSWER);
        if (!bufs[i])
            die("out of memory");
    }
    struct io_uring ring;
    struct io_uring_params p = {0};
    if (argc == 7)
        p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(4 * MAX_CONNS, &ring, &p) < 0)
        die("io_uring_queue_init");
    long sent = 0, done = 0;
    for (int i = 0; i < conns && sent < requests; i++, sent++)
        queue_request(&ring, i);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (done < requests) {
        if (io_uring_submit_and_wait(&ring, 1) < 0)
            die("submit_and_wait");
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            int i = (int)(cqe->user_data >> 1);
            if (!(cqe->user_data & 1)) {
                if (cqe->res < 0)
                    die("send failed");
                continue;
            }
            if (cqe->res <= 0)
                die("recv failed or closed");
            got[i] += (size_t)cqe->res;
            bufs[i][got[i]] = 0;
            size_t total = answer_length(bufs[i]);
            if (total == 0 || got[i] < total) {
                if (got[i] >= MAX_ANSWER - 1)
                    die("an answer longer than 64 KiB");
                queue_recv(&ring, i);
                continue;
            }
            done++;
            if (sent < requests) {
                queue_request(&ring, i);
                sent++;
            }
        }
        io_uring_cq_advance(&ring, seen);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%ld requests in %.3f s, %.0f req/s\n", done, secs, (double)done / secs);
    return 0;
}
