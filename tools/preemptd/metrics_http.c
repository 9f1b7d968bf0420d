/* metrics_http.c: preemptd's --metrics endpoint, GET /metrics over libmicrohttpd in its own thread.
 * Issue 43 (Prometheus metrics; the scheduling thread never serves HTTP); FLEP §3 (one scheduler per node). */
#include "preemptd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* Prometheus scrapes one at a time; a few more let a person's curl in too, and no more can pile up. */
#define METRICS_CONNECTIONS 8
#define METRICS_TIMEOUT_S 10

preempt_daemon_status preemptd_metrics_parse_address(const char *text, char *address, size_t address_bytes,
                                                     uint16_t *port, char *why, size_t why_bytes) {
  const char *colon = strrchr(text, ':');
  const char *port_text = colon ? colon + 1 : text;
  size_t address_length = colon ? (size_t)(colon - text) : 0;
  /* Loopback unless asked: the metrics name every client's program, user and job. */
  if (address_length == 0)
    snprintf(address, address_bytes, "127.0.0.1");
  else if (address_length < address_bytes)
    snprintf(address, address_bytes, "%.*s", (int)address_length, text);
  struct in_addr parsed;
  if (address_length >= address_bytes || inet_pton(AF_INET, address, &parsed) != 1) {
    snprintf(why, why_bytes, "--metrics takes [IPV4ADDRESS:]PORT, got '%s': not an IPv4 address", text);
    return PREEMPT_DAEMON_MALFORMED;
  }
  char *end = NULL;
  errno = 0;
  long value = strtol(port_text, &end, 10);
  if (errno || end == port_text || *end || value < 0 || value > 65535) {
    snprintf(why, why_bytes, "--metrics takes [IPV4ADDRESS:]PORT, got '%s': the port is not 0..65535", text);
    return PREEMPT_DAEMON_MALFORMED;
  }
  *port = (uint16_t)value;
  return PREEMPT_DAEMON_OK;
}

static enum MHD_Result answer_text(struct MHD_Connection *connection, unsigned int code, const char *text) {
  struct MHD_Response *response =
      MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
  if (!response)
    return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
  if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
    MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  enum MHD_Result result = MHD_queue_response(connection, code, response);
  MHD_destroy_response(response);
  return result;
}

static enum MHD_Result serve(void *context, struct MHD_Connection *connection, const char *url, const char *method,
                             const char *version, const char *upload_data, size_t *upload_data_size,
                             void **request_state) {
  (void)version;
  (void)upload_data;
  (void)upload_data_size;
  (void)request_state;
  preemptd_context *ctx = context;
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    return answer_text(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics\n");
  if (strcmp(url, "/metrics") != 0)
    return answer_text(connection, MHD_HTTP_NOT_FOUND, "not found: preemptd serves /metrics\n");
  preempt_metrics_snapshot snapshot;
  char *text = NULL;
  size_t length = 0;
  if (preemptd_metrics_snapshot(ctx, &snapshot) != PREEMPT_DAEMON_OK)
    return answer_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "preemptd: out of memory\n");
  int formatted = preempt_metrics_format(&snapshot, &text, &length);
  preemptd_metrics_release(&snapshot);
  if (formatted != 0)
    return answer_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "preemptd: out of memory\n");
  struct MHD_Response *response = MHD_create_response_from_buffer(length, text, MHD_RESPMEM_MUST_FREE);
  if (!response) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
  enum MHD_Result result = MHD_queue_response(connection, MHD_HTTP_OK, response);
  MHD_destroy_response(response);
  return result;
}

preempt_daemon_status preemptd_metrics_start(preemptd_context *ctx, const char *address, uint16_t port,
                                             uint16_t *bound_port, char *why, size_t why_bytes) {
  struct sockaddr_in bind_address;
  memset(&bind_address, 0, sizeof bind_address);
  bind_address.sin_family = AF_INET;
  bind_address.sin_port = htons(port);
  if (inet_pton(AF_INET, address, &bind_address.sin_addr) != 1) {
    snprintf(why, why_bytes, "metrics address %s is not an IPv4 address", address);
    return PREEMPT_DAEMON_MALFORMED;
  }
  errno = 0;
  struct MHD_Daemon *server = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, port, NULL, NULL, serve, ctx, MHD_OPTION_SOCK_ADDR,
      (const struct sockaddr *)&bind_address, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CONNECTIONS,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_TIMEOUT_S, MHD_OPTION_END);
  if (!server) {
    snprintf(why, why_bytes, "cannot serve metrics on %s:%u: %s", address, (unsigned)port,
             errno ? strerror(errno) : "libmicrohttpd could not start");
    return PREEMPT_DAEMON_SYSTEM;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(server, MHD_DAEMON_INFO_BIND_PORT);
  *bound_port = info ? info->port : port;
  ctx->metrics_server = server;
  return PREEMPT_DAEMON_OK;
}

void preemptd_metrics_stop(preemptd_context *ctx) {
  if (ctx->metrics_server)
    MHD_stop_daemon(ctx->metrics_server);
  ctx->metrics_server = NULL;
}
