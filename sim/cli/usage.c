/* The usage text of each command (`stepsim NAME --help`, `stepsim help NAME`), which main.c's
 * command table points at. cli_opts_parse asserts, on --help, that a usage names every
 * option of its command's table. */
#include "cli/usage.h"

const char cli_usage_run[] =
    "usage: stepsim run SCENARIO.yaml [-o OUT.h5] [--set KEY=VALUE]... [--json] [--steps N]\n"
    "                   [--no-timeline] [--no-op-sharing] [--no-isolated-rounds]\n"
    "                   [--max-memory SIZE]\n"
    "\n"
    "Generates the trace the scenario implies, replays it on the modelled cluster and reports\n"
    "step time, throughput, MFU, bubbles, exposed communication and per-GPU memory.\n"
    "\n"
    "  -o, --output OUT.h5   write the results (HDF5 schema 1, docs/hdf5-schema.md)\n"
    "  --set KEY=VALUE       override a scenario key by dotted path (parallel.dp=4,\n"
    "                        topology.gpu.memory=\"40 GiB\"); VALUE is a YAML flow value\n"
    "  --json                print the summary as one JSON object (docs/json.md)\n"
    "  --steps N             simulate N optimizer steps (overrides simulation.steps)\n"
    "  --no-timeline         do not record the per-op timeline (smaller files)\n"
    "  --no-op-sharing       generate every rank's ops, none borrowed from the first rank of\n"
    "                        its pipeline stage; a check: the results are the same\n"
    "  --no-isolated-rounds  time every transfer as a max-min flow, also collective rounds\n"
    "                        alone on their links; a check: the results are the same\n"
    "  --max-memory SIZE     refuse (exit 2) a run estimated to need more memory than SIZE\n"
    "                        (8GiB, 500MB; default: 80% of this machine's memory)\n";

const char cli_usage_check[] =
    "usage: stepsim check SCENARIO.yaml [--set KEY=VALUE]... [--max-memory SIZE]\n"
    "\n"
    "Loads and validates the scenario and the files it references, and estimates the run's\n"
    "work against stepsim's limits and the memory budget as `run` would. Exit 0 when valid;\n"
    "2 with one FILE:LINE:COL: error: line when not. --set and --max-memory as for run.\n";

const char cli_usage_mem[] =
    "usage: stepsim mem SCENARIO.yaml [--set KEY=VALUE]... [--json] [--no-op-sharing]\n"
    "                   [--max-memory SIZE]\n"
    "\n"
    "Prints the per-GPU memory plan (params, grads, optimizer, activations, buffers) and the\n"
    "OOM verdict without replaying the step: the binding item and the changes checked that\n"
    "fit, each with its --set overrides and peak. --set, --json and --no-op-sharing as for run;\n"
    "--max-memory as for run, for the plan alone (no replay state).\n";

const char cli_usage_topo[] =
    "usage: stepsim topo TOPOLOGY.yaml [--set KEY=VALUE]... [--route A B]... [--max-memory SIZE]\n"
    "\n"
    "Builds the topology graph and prints its devices and links by class, the bandwidth a\n"
    "GPU can inject inside its node and into the network, the bisection bandwidth (the first\n"
    "half of the GPUs to the second), and the route, latency and bottleneck between GPUs.\n"
    "\n"
    "  --set KEY=VALUE  override a topology key (nodes=64, node.nics.count=4, ...)\n"
    "  --route A B      show the route from A to B (device names like gpu3, or GPU indices)\n"
    "  --max-memory SIZE  refuse a graph estimated above SIZE (default: 80% of the memory\n"
    "                   stepsim may use; docs/cli.md)\n";

const char cli_usage_import[] =
    "usage: stepsim import FRAMEWORK SOURCE -o SCENARIO.yaml [--model MODEL]\n"
    "                      [--topology TOPOLOGY] [--name NAME]\n"
    "\n"
    "Writes a training framework's config as a stepsim scenario: each key commented with the\n"
    "field it came from, the fields with no stepsim equivalent listed at the top. FRAMEWORK\n"
    "and SOURCE:\n"
    "  deepspeed   a DeepSpeed config (ds_config.json)\n"
    "  accelerate  an Accelerate config (FSDP, DeepSpeed plugin or DDP; default_config.yaml)\n"
    "  torchtitan  a torchtitan training config (train.toml)\n"
    "  megatron    Megatron-LM's pretrain_gpt.py arguments, quoted as one argument\n"
    "A scenario can also name the file itself: parallel: {from: {deepspeed: ds_config.json}}.\n"
    "\n"
    "  -o, --output SCENARIO.yaml  the scenario to write (an existing file is refused)\n"
    "  --model MODEL        the model: a workload name, a file, or a Hugging Face config.json\n"
    "                       (Megatron's arguments and torchtitan's model name give one too)\n"
    "  --topology TOPOLOGY  the cluster; its GPUs fill dp when the config does not give it\n"
    "  --name NAME          the scenario's name (default: imported)\n";

const char cli_usage_export_csv[] =
    "usage: stepsim export-csv OUT.h5 TABLE [--run NAME] [-o OUT.csv]\n"
    "\n"
    "Writes one table of a results file as CSV (RFC 4180, a header of the column names, strings\n"
    "as text, NaN as an empty field), for pandas, spreadsheets and scripts. TABLE is sweep or\n"
    "inputs (the file's), or summary, ranks, timeline, memory, bubbles, links or steps (a\n"
    "run's: the file's only run, or --run NAME). docs/hdf5-schema.md has the columns.\n"
    "\n"
    "  --run NAME          the run whose table to write (a file of several runs needs it)\n"
    "  -o, --output OUT.csv  write there instead of standard output (whole or not at all)\n";

const char cli_usage_bench_coll[] =
    "usage: stepsim bench-coll --topology T.yaml --op OP --gpus N [--algo A] [--proto P]\n"
    "                          [--min-bytes B] [--max-bytes B] [--step-factor F]\n"
    "                          [--set KEY=VALUE]... [--json]\n"
    "\n"
    "Times one collective on the first N GPUs of the topology, alone on the network, for\n"
    "sizes from --min-bytes to --max-bytes (doubling; default 8 B to 8 GiB), like\n"
    "nccl-tests. Sizes follow nccl-tests: the buffer of all_reduce/broadcast/reduce, the\n"
    "gathered output of all_gather, the input of reduce_scatter, the send buffer of\n"
    "all_to_all.\n"
    "\n"
    "  --topology T.yaml  the topology file\n"
    "  --op OP            all_reduce, all_gather, reduce_scatter, broadcast, reduce,\n"
    "                     all_to_all, send_recv (one way), ring_shift (each GPU to the\n"
    "                     next: both ways on 2 GPUs); nccl-tests spellings like allreduce work\n"
    "  -g, --gpus N       the first N GPUs of the topology (1 to 1048576; 2 for send_recv)\n"
    "  --algo A           ring, tree, hd, direct, pairwise, hierarchical, nvls (default:\n"
    "                     auto, the fastest of NCCL's own algorithms by the model, as\n"
    "                     NCCL's tuner picks)\n"
    "  --proto P          ll, ll128, simple (default: auto)\n"
    "  -b, --min-bytes B  the first size (default 8): 8, 64K, 1M, 1G as nccl-tests writes\n"
    "                     them (1024-based), or with units (1MiB, 8GB)\n"
    "  -e, --max-bytes B  the last size at most (default 8G)\n"
    "  -f, --step-factor F  each size F times the last (default 2, nccl-tests' -f)\n"
    "  --set KEY=VALUE    override a topology key (nodes=2,\n"
    "                     protocols.simple.efficiency.nvlink=0.9)\n"
    "  --json             one JSON object per size instead of the table\n";

const char cli_usage_bench[] =
    "usage: stepsim bench [--engine-only] [--quick] [--only NAME[,NAME...]] [--dir DIR]\n"
    "                     [--mem-limit GIB] [--json]\n"
    "\n"
    "Measures the simulator: the event queue alone (the engine floor, events/s with 10^3 and\n"
    "10^5 events pending), then each reference scenario of DIR (default scenarios/bench,\n"
    "run from the repository root) in a child process: ops generated, events, flows and\n"
    "flow-rate re-solves, generation and replay wall time, events/s, ns per event against\n"
    "the floor, peak RSS, simulated time / wall time. One step each, no timeline.\n"
    "\n"
    "  --engine-only    only the engine floor\n"
    "  --quick          10x fewer engine events; only the scenarios under 1,024 GPUs\n"
    "  --only NAMES     only these scenarios (file names without .yaml, comma-separated)\n"
    "  --dir DIR        where the reference scenarios are (default scenarios/bench)\n"
    "  --mem-limit GIB  address-space limit of each scenario's process, GiB (default: 90%\n"
    "                   of physical memory); a scenario that needs more fails cleanly\n"
    "  --json           one JSON object instead of the tables\n";

const char cli_usage_trace[] =
    "usage: stepsim trace SCENARIO.yaml -o TRACE.h5 [--set KEY=VALUE]... [--max-memory SIZE]\n"
    "\n"
    "Writes the trace the scenario implies: every rank's ops (compute kernels with FLOPs and\n"
    "bytes, collectives, copies), their dependencies and memory events, in the HDF5 layout\n"
    "of docs/trace-format.md. Edit it, or set measured durations, then `stepsim replay` it.\n"
    "\n"
    "  -o, --output TRACE.h5  the trace file to write\n"
    "  --set KEY=VALUE        override a scenario key, as for run\n"
    "  --max-memory SIZE      the memory budget, as for run\n";

const char cli_usage_replay[] =
    "usage: stepsim replay TRACE.h5 [--topology T.yaml] [--set KEY=VALUE]... [-o OUT.h5]\n"
    "                      [--json] [--steps N] [--no-timeline] [--no-isolated-rounds]\n"
    "                      [--max-memory SIZE]\n"
    "\n"
    "Replays a trace file on a cluster and reports as `stepsim run` does. The scenario the\n"
    "trace was made from (stored in it) supplies the topology, GPU and simulation settings;\n"
    "--topology replaces the topology, --set changes keys of that scenario (the trace's ops\n"
    "stay as they are: the parallel layout must keep its number of ranks). -o (--output),\n"
    "--json, --steps, --no-timeline, --no-isolated-rounds and --max-memory (against the rows\n"
    "the file declares) as for run.\n";

const char cli_usage_report[] =
    "usage: stepsim report OUT.h5 [--csv]\n"
    "\n"
    "Summarises a results file: one line per run sorted by throughput (OOM runs flagged,\n"
    "skipped and failed runs listed with their reason), the bubble and exposed-communication\n"
    "breakdown per run, and time to train, GPU-hours and cost for runs with training.tokens.\n"
    "\n"
    "  --csv   one comma-separated row per run (with a header), for spreadsheets\n";

const char cli_usage_export[] =
    "usage: stepsim export-perfetto OUT.h5 [--run NAME] -o TRACE.json\n"
    "\n"
    "Writes a run of a results file as Chrome Trace Event JSON for ui.perfetto.dev or\n"
    "chrome://tracing: one process per node, one thread per GPU stream, ops as complete\n"
    "events (layer, micro-batch, bytes and FLOPs in args), bubbles on their own track and\n"
    "memory as a counter per GPU.\n"
    "\n"
    "  --run NAME           the run to export (needed when the file holds several)\n"
    "  -o, --output FILE    the JSON file to write\n";

const char cli_usage_sweep[] =
    "usage: stepsim sweep SWEEP.yaml -o OUT.h5 [--resume] [--json] [--progress]\n"
    "                     [--timeline] [--steps N] [--no-op-sharing] [--no-isolated-rounds]\n"
    "                     [--max-memory SIZE]\n"
    "\n"
    "Runs every combination of a sweep file's axes over its base scenario, or over each of a\n"
    "list of scenario files (docs/sweeps.md), and writes them into one results file, with a\n"
    "/sweep table of the runs. Invalid combinations are runs with status skipped, failed runs\n"
    "status error; neither stops the sweep. Runs under mpirun too (one coordinator that also\n"
    "works, dynamic balancing), with the same file whatever the number of ranks.\n"
    "\n"
    "  -o, --output OUT.h5   the results file (runs in progress live in OUT.h5.runs/)\n"
    "  --resume              finish an interrupted sweep: run only the runs not done yet\n"
    "  --json                print one JSON object per run, in run order, at the end\n"
    "  --progress            print progress on stderr even when it is not a terminal (it is\n"
    "                        never one under mpirun)\n"
    "  --timeline            also record each run's per-op timeline (by default a sweep\n"
    "                        keeps the summaries, ranks and memory: far smaller files)\n"
    "  --no-timeline         the default; accepted for older command lines\n"
    "  --steps N             simulate N steps per run\n"
    "  --no-op-sharing       generate every rank's ops in every run, as for run\n"
    "  --no-isolated-rounds  every transfer a max-min flow in every run, as for run\n"
    "  --max-memory SIZE     the memory budget of each run, as for run (a run over it is\n"
    "                        skipped); per process, also under mpirun\n";

const char cli_usage_plan[] =
    "usage: stepsim plan SCENARIO.yaml [--top K] [--headroom SIZE|FRACTION] [-o OUT.h5]\n"
    "                    [--json] [--progress] [--steps N] [--resume] [--no-op-sharing]\n"
    "                    [--no-isolated-rounds] [--max-memory SIZE]\n"
    "\n"
    "Searches the parallel strategies for the scenario's model, cluster and batch (TP/SP,\n"
    "PP and its schedule, CP, EP, DDP/ZeRO/FSDP, micro-batch, recompute, offload): plans each,\n"
    "replays those whose memory fits, and prints the best K with step time, throughput, MFU,\n"
    "memory headroom and exposed communication, then the best of those that do not fit and\n"
    "why. Candidates that do not fit are not timed. Runs under mpirun like a sweep\n"
    "(docs/plan.md).\n"
    "\n"
    "  --top K               how many strategies to list (default 10)\n"
    "  --headroom SIZE|FRACTION\n"
    "                        the memory a ranked strategy leaves free: a size (2GiB) or a\n"
    "                        fraction of the capacity (default 0.05); a candidate closer to\n"
    "                        the capacity is replayed as `tight` but not ranked\n"
    "  -o, --output OUT.h5   keep every candidate's results (default: a temporary file)\n"
    "  --json                one JSON object per candidate, in candidate order, instead of\n"
    "                        the table\n"
    "  --progress            print progress on stderr even when it is not a terminal\n"
    "  --steps N             simulate N steps per candidate\n"
    "  --resume              finish an interrupted search of the same -o OUT.h5\n"
    "  --no-op-sharing       generate every rank's ops in every candidate, as for run\n"
    "  --no-isolated-rounds  every transfer a max-min flow in every candidate, as for run\n"
    "  --max-memory SIZE     the memory budget of each candidate, as for run (one over it is\n"
    "                        skipped)\n";

const char cli_usage_advise[] =
    "usage: stepsim advise SCENARIO.yaml [--set KEY=VALUE]... [--json] [--steps N]\n"
    "                      [--max-memory SIZE]\n"
    "\n"
    "The ladder of docs/memory.md for the scenario's model, GPUs and global batch, each rung a\n"
    "concrete configuration given as --set changes: LoRA and QLoRA (full fine-tuning only),\n"
    "one GPU (bf16, full recompute, micro-batch 1, accumulation), DDP, ZeRO-1, ZeRO-2, FSDP\n"
    "over every GPU, TP+SP within a node, PP. Each is loaded, planned and, when it fits,\n"
    "replayed as `run --set` would; a row gives its status (ok, oom, invalid), peak,\n"
    "headroom, step time, tokens/s and what stops it (the bottleneck, the binding item or the\n"
    "reason), then the fastest rung that fits.\n"
    "\n"
    "  --set KEY=VALUE    override a scenario key before the rungs' own changes\n"
    "  --json             one JSON object per rung, in the ladder's order (docs/json.md)\n"
    "  --steps N          simulate N optimizer steps per rung (overrides simulation.steps)\n"
    "  --max-memory SIZE  refuse (invalid rung) one estimated to need more memory than SIZE\n"
    "                     (default: 80% of this machine's memory)\n";
