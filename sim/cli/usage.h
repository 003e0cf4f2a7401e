/* The usage texts of the commands (usage.c). */
#ifndef SIM_CLI_USAGE_H
#define SIM_CLI_USAGE_H

extern const char cli_usage_run[];
extern const char cli_usage_check[];
extern const char cli_usage_mem[];
extern const char cli_usage_topo[];
extern const char cli_usage_import[];
extern const char cli_usage_export_csv[];
extern const char cli_usage_bench_coll[];
extern const char cli_usage_bench[];
extern const char cli_usage_trace[];
extern const char cli_usage_replay[];
extern const char cli_usage_report[];
extern const char cli_usage_export[];
extern const char cli_usage_sweep[];
extern const char cli_usage_plan[];
extern const char cli_usage_advise[];

#endif
