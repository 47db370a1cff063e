/* handler.c — what a handler calls (server.h): the parameters, headers and
 * connection of its request, through the accessors of the transport that
 * received it (http.c; none for a request made in a test), and the helpers
 * that fill its response. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server.h"

const char *server_param_n(const server_request *r, const char *name, int i)
{
    return r->ops && r->ops->param ? r->ops->param(r, name, i) : NULL;
}

const char *server_param(const server_request *r, const char *name)
{
    return server_param_n(r, name, 0);
}

const char *server_param_name(const server_request *r, int i)
{
    return r->ops && r->ops->param_name ? r->ops->param_name(r, i) : NULL;
}

const char *server_header(const server_request *r, const char *name)
{
    return r->ops && r->ops->header ? r->ops->header(r, name) : NULL;
}

int server_client_gone(const server_request *r)
{
    return r && r->ops && r->ops->client_gone ? r->ops->client_gone(r) : 0;
}

void server_reply_take(server_response *w, int status, const char *ctype, char *body, size_t len)
{
    free(w->body);
    w->status = status;
    snprintf(w->content_type, sizeof w->content_type, "%s", ctype ? ctype : "application/json");
    w->body = body;
    w->len = len;
}

void server_reply(server_response *w, int status, const char *ctype, const char *body, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) {
        server_reply_take(w, 500, "text/plain", NULL, 0);
        return;
    }
    memcpy(copy, body, len);
    copy[len] = 0;
    server_reply_take(w, status, ctype, copy, len);
}

void server_replyf(server_response *w, int status, const char *ctype, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = NULL;
    int n = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (n < 0) {
        server_reply_take(w, 500, "text/plain", NULL, 0);
        return;
    }
    server_reply_take(w, status, ctype, p, (size_t)n);
}

/* JSON string escaping for messages we build ourselves. */
static void json_esc(sbuf *b, const char *s)
{
    sbuf_putc(b, '"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            sbuf_putc(b, '\\');
            sbuf_putc(b, (char)c);
        } else if (c < 0x20)
            sbuf_printf(b, "\\u%04x", c);
        else
            sbuf_putc(b, (char)c);
    }
    sbuf_putc(b, '"');
}

void server_reply_error(server_response *w, int status, const char *message, const char *details)
{
    sbuf b = {0};
    sbuf_printf(&b, "{\"error\":{\"code\":%d,\"message\":", status);
    json_esc(&b, message);
    if (details && *details) {
        sbuf_puts(&b, ",\"details\":");
        json_esc(&b, details);
    }
    sbuf_puts(&b, "}}");
    server_reply_take(w, status, "application/json", b.p, b.len);
}

void server_add_header(server_response *w, const char *name, const char *value)
{
    if (w->nheaders >= SERVER_MAX_HEADERS) return;
    snprintf(w->headers[w->nheaders][0], sizeof w->headers[0][0], "%s", name);
    snprintf(w->headers[w->nheaders][1], sizeof w->headers[0][1], "%s", value);
    w->nheaders++;
}
