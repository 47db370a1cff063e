/* ksparse.c — the words kickstart reads: its variable rewriting and
 * quoting (the man page's VARIABLE REWRITING, as pegasus-kickstart's parser
 * behaves, quirks included: tests/integration/84_kickstart_chain.sh), the
 * -I argument file and the -s/-S file lists.
 *
 * Two grammars.  A side job's command line (KICKSTART_SETUP, _PREJOB,
 * _POSTJOB, _CLEANUP, _WRAPPER) is split into words on whitespace; quotes
 * are removed; "..." translates \a \b \n \r \t \v; $NAME and ${NAME}
 * expand outside single quotes.  An argument of the main job is already a
 * word: only $NAME, ${NAME} and a backslash outside quotes are rewritten,
 * quotes stay, but they must be balanced.  An undefined variable, an
 * unbalanced quote or a word longer than KS_ARG_MAX is an error (kickstart
 * exits 1 with the record). */
#include "kickstart.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { E_APOS = 1, E_QUOTE, E_VARNAME, E_BRACE, E_END };

static const char *const parse_errors[] = {
    "",
    "Error 1: missing closing apostrophe",
    "Error 2: missing closing quote",
    "Error 3: illegal variable name",
    "Error 4: missing closing brace",
    "Error 5: premature end of string",
};

void ks_args_free(ks_args *a)
{
    for (int i = 0; i < a->n; i++) free(a->v[i]);
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

int ks_args_push(ks_args *a, const char *s)
{
    char **v = realloc(a->v, sizeof *v * (size_t)(a->n + 2));
    if (!v) return -1;
    a->v = v;
    if (!(v[a->n] = strdup(s))) return -1;
    v[++a->n] = NULL;
    return 0;
}

/* ---- the word being built ------------------------------------------------ */

typedef struct word {
    char *buf;
    size_t len;
    char var[130];
    size_t vlen;
    char *err;
    size_t errlen;
    int failed;
} word;

static int fail(word *w, const char *fmt, ...)
{
    if (w->failed) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, w->errlen, fmt, ap);
    va_end(ap);
    w->failed = 1;
    return -1;
}

static int put(word *w, char c)
{
    if (w->len >= KS_ARG_MAX) return fail(w, "Argument too long");
    w->buf[w->len++] = c;
    return 0;
}

static int var_put(word *w, char c)
{
    if (w->vlen >= 128) return fail(w, "Variable name too long");
    w->var[w->vlen++] = c;
    return 0;
}

/* Appends the value of the variable collected so far. */
static int resolve(word *w)
{
    w->var[w->vlen] = 0;
    w->vlen = 0;
    const char *v = getenv(w->var);
    if (!v) return fail(w, "Variable $%s does not exist", w->var);
    for (; *v; v++)
        if (put(w, *v) < 0) return -1;
    return 0;
}

static int finish(word *w, ks_args *out)
{
    w->buf[w->len] = 0;
    w->len = 0;
    return ks_args_push(out, w->buf) < 0 ? fail(w, "out of memory") : 0;
}

static int syntax(word *w, int e)
{
    return fail(w, "Error parsing arguments: %s", parse_errors[e]);
}

static int ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* ---- a side job's command line ------------------------------------------- */

enum line_state {
    L_SPACE,   /* between words */
    L_WORD,    /* in a bare word */
    L_APOS,    /* in '...' */
    L_APOS_BS, /* '...\ */
    L_QUOTE,   /* in "..." */
    L_ODD,     /* "...\X: kickstart then reads as if in '...' */
    L_ODD_BS,
    L_QUOTE_BS, /* "...\ */
    L_QDOLLAR,  /* "...$ */
    L_QBRACE,   /* "...${ */
    L_QNAME,    /* "...$NAME */
    L_DOLLAR,   /* $ */
    L_BRACE,    /* ${ */
    L_NAME,     /* $NAME */
    L_BS,       /* \ */
};

/* One character of a command line (0: the end); the next state, or -1. */
static int line_step(word *w, ks_args *out, int st, char c)
{
    switch (st) {
    case L_SPACE:
    case L_WORD:
        if (!c) return st == L_WORD && finish(w, out) < 0 ? -1 : 99;
        if (c == '"') return L_QUOTE;
        if (c == '\'') return L_APOS;
        if (c == '$') return L_DOLLAR;
        if (c == '\\') return L_BS;
        if (isspace((unsigned char)c)) return st == L_WORD && finish(w, out) < 0 ? -1 : L_SPACE;
        return put(w, c) < 0 ? -1 : L_WORD;
    case L_APOS:
        if (!c) return syntax(w, E_APOS);
        if (c == '\'') return L_WORD;
        if (c == '\\') return L_APOS_BS;
        return put(w, c) < 0 ? -1 : L_APOS;
    case L_APOS_BS:
        if (!c) return syntax(w, E_APOS);
        return put(w, c) < 0 ? -1 : L_APOS;
    case L_QUOTE:
        if (!c) return syntax(w, E_QUOTE);
        if (c == '"') return L_WORD;
        if (c == '\'') /* kickstart looks up the variable "" here */
            return resolve(w) < 0 || finish(w, out) < 0 ? -1 : L_SPACE;
        if (c == '$') return L_QDOLLAR;
        if (c == '\\') return L_QUOTE_BS;
        return put(w, c) < 0 ? -1 : L_QUOTE;
    case L_QUOTE_BS:
        if (!c) return syntax(w, E_QUOTE);
        if (isalnum((unsigned char)c) || c == '_') {
            const char *x = strchr("abnrtv", c);
            return put(w, x ? "\a\b\n\r\t\v"[x - "abnrtv"] : c) < 0 ? -1 : L_QUOTE;
        }
        return put(w, c) < 0                                                      ? -1
               : (ident(c) || isspace((unsigned char)c) || strchr("\"'{}$\\", c)) ? L_QUOTE
                                                                                  : L_ODD;
    case L_ODD:
        if (!c) return syntax(w, E_APOS);
        if (c == '\'') return L_QUOTE;
        if (c == '\\') return L_ODD_BS;
        return put(w, c) < 0 ? -1 : L_ODD;
    case L_ODD_BS:
        if (!c) return syntax(w, E_APOS);
        return put(w, c) < 0 ? -1 : L_ODD;
    case L_QDOLLAR:
        if (c == '{') return L_QBRACE;
        if (ident(c)) return var_put(w, c) < 0 ? -1 : L_QNAME;
        return syntax(w, E_QUOTE);
    case L_QBRACE:
    case L_BRACE:
        if (c == '}') return resolve(w) < 0 ? -1 : st == L_QBRACE ? L_QUOTE : L_WORD;
        if (!c || c == '"' || c == '\'' || c == '{') return syntax(w, E_BRACE);
        if (c == '$') return syntax(w, st == L_BRACE ? E_VARNAME : E_BRACE);
        return var_put(w, c) < 0 ? -1 : st;
    case L_QNAME:
        if (!c) return syntax(w, E_QUOTE);
        if (ident(c) || !(isspace((unsigned char)c) || strchr("\"'{}$\\", c)))
            return var_put(w, c) < 0 ? -1 : L_QNAME;
        if (resolve(w) < 0) return -1;
        return c == '"' ? L_WORD : c == '$' ? L_QDOLLAR : L_QUOTE;
    case L_DOLLAR:
        if (c == '{') return L_BRACE;
        if (ident(c)) return var_put(w, c) < 0 ? -1 : L_NAME;
        return syntax(w, E_VARNAME);
    case L_NAME:
        if (!c) return resolve(w) < 0 || finish(w, out) < 0 ? -1 : 99;
        if (ident(c) || c == '\\') return var_put(w, c) < 0 ? -1 : L_NAME;
        if (c == '$') return syntax(w, E_VARNAME);
        if (resolve(w) < 0) return -1;
        if (c == '"') return L_QUOTE;
        if (c == '\'') return L_APOS;
        if (c == '{' || c == '}' || isspace((unsigned char)c)) return L_WORD;
        return put(w, c) < 0 ? -1 : L_WORD;
    case L_BS:
        if (!c) return syntax(w, E_END);
        return put(w, c) < 0 ? -1 : L_WORD;
    }
    return -1;
}

/* ---- an argument of the main job ----------------------------------------- */

enum arg_state {
    A_PLAIN,    /* outside quotes */
    A_BS,       /* \ */
    A_APOS,     /* '... (kept) */
    A_APOS_BS,  /* '...\ */
    A_QUOTE,    /* "... (kept) */
    A_QUOTE_BS, /* "...\ */
    A_QDOLLAR,  /* "...$ */
    A_QBRACE,   /* "...${ */
    A_QNAME,    /* "...$NAME */
    A_DOLLAR,   /* $ */
    A_BRACE,    /* ${ */
    A_NAME,     /* $NAME */
};

/* After $NAME ended at c: where c takes us (c itself is kept). */
static int arg_after_name(word *w, char c, int quoted)
{
    if (resolve(w) < 0 || put(w, c) < 0) return -1;
    if (c == '"') return quoted ? A_PLAIN : A_QUOTE;
    if (c == '\'') return quoted ? A_QUOTE : A_APOS;
    return quoted ? A_QUOTE : A_PLAIN;
}

static int arg_step(word *w, ks_args *out, int st, char c)
{
    switch (st) {
    case A_PLAIN:
        if (!c) return finish(w, out) < 0 ? -1 : 99;
        if (c == '$') return A_DOLLAR;
        if (c == '\\') return A_BS;
        if (put(w, c) < 0) return -1;
        return c == '"' ? A_QUOTE : c == '\'' ? A_APOS : A_PLAIN;
    case A_BS:
        if (!c) return syntax(w, E_END);
        return put(w, c) < 0 ? -1 : A_PLAIN;
    case A_APOS:
    case A_QUOTE:
        if (!c) return syntax(w, st == A_APOS ? E_APOS : E_QUOTE);
        if (st == A_QUOTE && c == '$') return A_QDOLLAR;
        if (put(w, c) < 0) return -1;
        if (c == '\\') return st == A_APOS ? A_APOS_BS : A_QUOTE_BS;
        if (c == (st == A_APOS ? '\'' : '"')) return A_PLAIN;
        return st;
    case A_APOS_BS:
    case A_QUOTE_BS:
        if (!c) return syntax(w, st == A_APOS_BS ? E_APOS : E_QUOTE);
        return put(w, c) < 0 ? -1 : st == A_APOS_BS ? A_APOS : A_QUOTE;
    case A_QDOLLAR:
        if (!c || c == '"') return syntax(w, E_QUOTE);
        if (c == '{') return A_QBRACE;
        if (ident(c)) return var_put(w, c) < 0 ? -1 : A_QNAME;
        return syntax(w, E_VARNAME);
    case A_QBRACE:
    case A_BRACE:
        if (c == '}') return resolve(w) < 0 ? -1 : st == A_QBRACE ? A_QUOTE : A_PLAIN;
        if (!c || c == '"' || c == '\'' || c == '{') return syntax(w, E_BRACE);
        if (c == '$') return syntax(w, E_VARNAME);
        return var_put(w, c) < 0 ? -1 : st;
    case A_QNAME:
        if (!c) return syntax(w, E_QUOTE);
        if (c == '$') return resolve(w) < 0 ? -1 : A_QDOLLAR;
        if (ident(c) || !(isspace((unsigned char)c) || strchr("\"'{}\\", c)))
            return var_put(w, c) < 0 ? -1 : A_QNAME;
        return arg_after_name(w, c, 1);
    case A_DOLLAR:
        if (c == '{') return A_BRACE;
        if (ident(c)) return var_put(w, c) < 0 ? -1 : A_NAME;
        return syntax(w, E_VARNAME);
    case A_NAME:
        if (!c) return resolve(w) < 0 || finish(w, out) < 0 ? -1 : 99;
        if (c == '$') return syntax(w, E_VARNAME);
        if (ident(c) || c == '\\') return var_put(w, c) < 0 ? -1 : A_NAME;
        return arg_after_name(w, c, 0);
    }
    return -1;
}

typedef int (*step_fn)(word *, ks_args *, int, char);

static int run(step_fn step, const char *s, ks_args *out, char *err, size_t errlen)
{
    word w = {.err = err, .errlen = errlen};
    if (!(w.buf = malloc(KS_ARG_MAX + 1))) return -1;
    int st = 0;
    for (const char *p = s;; p++) {
        st = step(&w, out, st, *p);
        if (st < 0 || st == 99 || !*p) break;
    }
    free(w.buf);
    return st == 99 ? 0 : -1;
}

int ksparse_line(const char *line, ks_args *out, char *err, size_t errlen)
{
    return run(line_step, line, out, err, errlen);
}

int ksparse_arg(const char *arg, ks_args *out, char *err, size_t errlen)
{
    return run(arg_step, arg, out, err, errlen);
}

/* ---- -I: the command, one argument per line ------------------------------ */

int ksparse_argfile(const char *path, ks_args *out)
{
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        if (n == 0 || line[0] == '\r' || line[0] == '\n') continue;
        while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n')) line[--n] = 0;
        if (n > 0 && ks_args_push(out, line) < 0) rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

/* ---- -s / -S ------------------------------------------------------------- */

int ksparse_filelist_add(ks_filelist *l, const char *item)
{
    char **lfn = realloc(l->lfn, sizeof *lfn * (size_t)(l->n + 1));
    if (lfn) l->lfn = lfn;
    char **pfn = realloc(l->pfn, sizeof *pfn * (size_t)(l->n + 1));
    if (pfn) l->pfn = pfn;
    if (!lfn || !pfn) return ENOMEM;
    const char *eq = strchr(item, '=');
    l->lfn[l->n] = eq ? strndup(item, (size_t)(eq - item)) : NULL;
    l->pfn[l->n] = strdup(eq ? eq + 1 : item);
    if (!l->pfn[l->n]) return ENOMEM;
    l->n++;
    return 0;
}

int ksparse_filelist_read(ks_filelist *l, const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) return errno;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        size_t n = strlen(line);
        while (n > 0 && isspace((unsigned char)line[n - 1])) line[--n] = 0;
        if (n) rc = ksparse_filelist_add(l, line);
    }
    free(line);
    fclose(f);
    return rc;
}

void ksparse_filelist_free(ks_filelist *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->lfn[i]);
        free(l->pfn[i]);
    }
    free(l->lfn);
    free(l->pfn);
    memset(l, 0, sizeof *l);
}
