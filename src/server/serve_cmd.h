/* serve_cmd.h — entry points of the server core's subcommands
 * (server_main.h lists them): `jobscope serve` (serve.c) and
 * `jobscope import` (import.c). */
#ifndef JOBSCOPE_SERVE_CMD_H
#define JOBSCOPE_SERVE_CMD_H

struct server_module;
/* modules: the server's, NULL-ended (server_main.h SERVER_MODULES). */
int serve_main(int argc, char **argv, const struct server_module *const *modules);
int import_main(int argc, char **argv);

#endif
