/*
 * authz_cmd.h - `weft-pilot authz-filters` (authz_cmd.c): the RBAC filters weft-pilot builds for
 * one workload, printed as JSON, for conformance tests and inspection.
 */
#ifndef WF_PILOT_AUTHZ_CMD_H
#define WF_PILOT_AUTHZ_CMD_H

/* argv[0] is "authz-filters". Returns the exit code: 0 printed, 1 load failure, 2 bad
 * command line. */
int wf_authz_cmd(int argc, char **argv);

#endif
