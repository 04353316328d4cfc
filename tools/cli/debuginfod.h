/* SPDX-License-Identifier: GPL-2.0 */
/*
 * debuginfod.c: the debug file (or the executable) of a build-id, fetched
 * from the debuginfod servers $DEBUGINFOD_URLS names, through
 * libdebuginfod and its own cache ($DEBUGINFOD_CACHE_PATH, else
 * ~/.cache/debuginfod_client).  A stripped binary's frames are named from
 * its debug file's .symtab; the executable gives the segments that turn a
 * file offset into an address when the trace's symbol store lacks it.
 *
 * Off when $DEBUGINFOD_URLS is unset or empty, or after dbginfo_disable()
 * (--no-debuginfod): then nothing is asked and nothing is said.  What a
 * server sends is untrusted: a file is handed out only if it is ELF and
 * carries the build-id asked for.
 */
#ifndef RINGTRACE_CLI_DEBUGINFOD_H
#define RINGTRACE_CLI_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --no-debuginfod: no lookup from now on. */
void dbginfo_disable(void);
/* Whether a lookup would ask a server. */
bool dbginfo_enabled(void);

/*
 * The debug file of @build_id (@len bytes): an open descriptor (the
 * caller closes it) and its path in the client's cache in *@path (the
 * caller frees it), or -errno with *@path NULL: -ENOSYS when lookups are
 * off; else not found or not usable, said once per build-id on stderr
 * with the server's reason.  A build-id is asked of the servers once per
 * process; later calls repeat the first answer.  On a terminal, each
 * download prints one line.
 */
int dbginfo_find(const uint8_t *build_id, size_t len, char **path);
/* The same for the executable (or shared object) itself. */
int dbginfo_find_executable(const uint8_t *build_id, size_t len, char **path);

/*
 * The lookups made so far (dbginfo_find*() calls while lookups are on,
 * answered again or not): what was named with a server's help since a
 * given count.
 */
unsigned long dbginfo_lookups(void);

/* Ends the client session and forgets the answers and dbginfo_disable(). */
void dbginfo_end(void);

#endif /* RINGTRACE_CLI_DEBUGINFOD_H */
