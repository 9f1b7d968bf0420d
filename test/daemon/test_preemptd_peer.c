/* test_preemptd_peer.c: unit test of preemptd's peer.c: nice from /proc/<pid>/stat, the peer at connect, the grant.
 * EffiSha §6.4 (default priority from nice; only root above the default). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/check.h"
#include "preemptd.h"

static int parse(const char *text, int *nice) { return (int)preemptd_parse_nice(text, strlen(text), nice); }

static void test_parse_nice(void) {
  int nice = 99;
  /* Fields after comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime
   * cstime priority nice ... */
  CHECK(parse("42 (cat) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 25 5 1 0 100\n", &nice) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(nice, 5);
  /* comm is the program's choice: spaces, parentheses and a fake field list inside it must not shift fields. */
  CHECK(parse("7 (a) R 1 2 3 (b) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 39 "
              "-19 1 0 100",
              &nice) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(nice, (unsigned long long)-19);
  CHECK(parse("7 () R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9", &nice) == PREEMPT_DAEMON_OK);
  CHECK_EQ_U64(nice, 0);
  /* Malformed: no ')', too few fields, not a number, out of range, a number cut by the read. */
  CHECK(parse("42 cat R 1 42", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("42 (cat) R 1 42 42 0 -1", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("42 (cat) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 25 x5 1", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("42 (cat) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 25 20 1", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("42 (cat) R 1 42 42 0 -1 4194304 10 0 0 0 1 2 0 0 25 -21 1", &nice) == PREEMPT_DAEMON_MALFORMED);
  CHECK(parse("", &nice) == PREEMPT_DAEMON_MALFORMED);
  /* This process, for real. */
  CHECK(preemptd_read_nice(getpid(), &nice) == PREEMPT_DAEMON_OK);
  CHECK(nice >= -20 && nice <= 19);
}

static void test_grant(void) {
  int32_t granted = 0, limit = 0;
  /* A user: the default is -nice and also the most it may have. */
  preempt_grant_priority(1000, 0, true, 20, &granted, &limit);
  CHECK(granted == 0 && limit == 0);
  preempt_grant_priority(1000, 5, false, 0, &granted, &limit);
  CHECK(granted == -5 && limit == -5);
  preempt_grant_priority(1000, 5, true, -20, &granted, &limit);
  CHECK(granted == -20 && limit == -5);
  preempt_grant_priority(1000, -10, true, 15, &granted, &limit);
  CHECK(granted == 10 && limit == 10);
  /* Root: anything up to MAX; without a request, still -nice. */
  preempt_grant_priority(0, 0, true, 20, &granted, &limit);
  CHECK(granted == 20 && limit == PREEMPT_PRIORITY_MAX);
  preempt_grant_priority(0, 3, false, 0, &granted, &limit);
  CHECK(granted == -3 && limit == PREEMPT_PRIORITY_MAX);
  /* A stub's own priority is clamped the same way, below too. */
  CHECK(preempt_clamp_priority(7, 0) == 0);
  CHECK(preempt_clamp_priority(-99, 0) == PREEMPT_PRIORITY_MIN);
  CHECK(preempt_clamp_priority(-3, 0) == -3);
}

/* At connect: pid, uid and nice of the peer, here this very process (a socketpair's credentials are its
 * creator's); and a peer that has exited is refused, not read under a pid that may belong to another process. */
static void test_identify(void) {
  int pair[2];
  CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
  pid_t pid = 0;
  uid_t uid = 1;
  int nice_value = 99, nice_error = -1;
  CHECK(preemptd_peer_identify(pair[0], &pid, &uid, &nice_value, &nice_error) == PREEMPT_DAEMON_OK);
  CHECK(nice_error == 0);
  CHECK(pid == getpid());
  CHECK(uid == geteuid());
  errno = 0;
  int own = nice(0);
  CHECK(errno == 0 && nice_value == own);
  close(pair[0]);
  close(pair[1]);
  /* A child creates the pair, hands one end over and exits: the peer is gone. */
  int carrier[2];
  CHECK(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, carrier) == 0);
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    int inner[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, inner) != 0)
      _exit(1);
    char byte = 0;
    struct iovec vector = {&byte, 1};
    union {
      char buffer[CMSG_SPACE(sizeof(int))];
      struct cmsghdr align;
    } control;
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.buffer,
                             .msg_controllen = sizeof control.buffer};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &inner[0], sizeof(int));
    _exit(sendmsg(carrier[1], &message, 0) == 1 ? 0 : 1);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  int fds[1] = {-1}, fd_count = 0, flags = 0;
  char byte;
  CHECK(preempt_receive_packet(carrier[0], &byte, 1, 0, fds, 1, &fd_count, &flags) == 1 && fd_count == 1);
  CHECK(preemptd_peer_identify(fds[0], &pid, &uid, &nice_value, &nice_error) == PREEMPT_DAEMON_SYSTEM);
  close(fds[0]);
  close(carrier[0]);
  close(carrier[1]);
}

int main(void) {
  test_parse_nice();
  test_grant();
  test_identify();
  CHECK_DONE("test_preemptd_peer");
}
