/* preempt-report.c: per-kernel context size of each preemption technique, from the CTXBack pass's statistics.
 * CTXBack §V-A, Fig. 7: LIVE, CKPT, CS-Defer, CTXBack, CTXBack+CS-Defer normalised to BASELINE, and their mean. */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preempt/json_text.h"

/* CMake passes the real paths; these keep a stand-alone build usable. */
#ifndef PREEMPT_REPORT_CLANG
#define PREEMPT_REPORT_CLANG "clang"
#endif
#ifndef PREEMPT_REPORT_LLC
#define PREEMPT_REPORT_LLC "llc"
#endif
#ifndef PREEMPT_REPORT_PLUGIN
#define PREEMPT_REPORT_PLUGIN "libpreempt.so"
#endif
#ifndef PREEMPT_REPORT_CUDA_PATH
#define PREEMPT_REPORT_CUDA_PATH "/usr/local/cuda"
#endif

extern char **environ;

#define PROGRAM_NAME "preempt-report"
#define STATS_MAGIC "# preempt-ctxback-stats"
#define STATS_VERSION_LINE STATS_MAGIC " 1"
#define STATS_SUFFIX ".ctxback.tsv"

/* Exit statuses: a failed routine check is worse news than a bad input, so
 * scripts can tell the two apart. */
enum { EXIT_REPORT_ERROR = 1, EXIT_CHECK_FAILED = 2 };

typedef enum stats_column {
  COLUMN_KERNEL,
  COLUMN_TARGET,
  COLUMN_POINTS,
  COLUMN_BASELINE,
  COLUMN_LDS,
  COLUMN_LIVE,
  COLUMN_CKPT,
  COLUMN_CS_DEFER,
  COLUMN_CTXBACK,
  COLUMN_CTXBACK_CS_DEFER,
  COLUMN_CTXBACK_CYCLES,
  COLUMN_CS_DEFER_CYCLES,
  COLUMN_COMBINED_CYCLES,
  COLUMN_PREEMPT_ROUTINES,
  COLUMN_RESUME_ROUTINES,
  COLUMN_BACKUP_INSTRUCTIONS,
  COLUMN_CHECKED,
  COLUMN_CHECK_FAILURES,
  COLUMN_COUNT
} stats_column;

/* The header line must list exactly these, in this order: a reordered file
 * from another version of the pass would otherwise be misread silently. */
static const char *const column_names[COLUMN_COUNT] = {
    "kernel", "target", "points", "baseline", "lds", "live", "ckpt", "cs_defer", "ctxback", "ctxback_cs_defer",
    "ctxback_cycles", "cs_defer_cycles", "combined_cycles", "preempt_routines", "resume_routines",
    "backup_instructions", "checked", "check_failures",
};

/* Fig. 7's bars besides BASELINE (which is 1.0 by definition), in the paper's order. */
typedef enum technique {
  TECHNIQUE_LIVE,
  TECHNIQUE_CKPT,
  TECHNIQUE_CS_DEFER,
  TECHNIQUE_CTXBACK,
  TECHNIQUE_COMBINED,
  TECHNIQUE_COUNT
} technique;

typedef struct technique_info {
  const char *json_name; /* key of its normalised value in JSON and CSV */
  stats_column column;   /* its summed context bytes */
} technique_info;

static const technique_info techniques[TECHNIQUE_COUNT] = {
    {"norm_live", COLUMN_LIVE},
    {"norm_ckpt", COLUMN_CKPT},
    {"norm_cs_defer", COLUMN_CS_DEFER},
    {"norm_ctxback", COLUMN_CTXBACK},
    {"norm_ctxback_cs_defer", COLUMN_CTXBACK_CS_DEFER},
};

/* Latency is reported only for the techniques that plan a routine per point. */
typedef enum latency {
  LATENCY_CTXBACK,
  LATENCY_CS_DEFER,
  LATENCY_COMBINED,
  LATENCY_COUNT
} latency;

typedef struct latency_info {
  const char *json_name;
  stats_column column; /* summed over the points */
} latency_info;

static const latency_info latencies[LATENCY_COUNT] = {
    {"mean_ctxback_cycles", COLUMN_CTXBACK_CYCLES},
    {"mean_cs_defer_cycles", COLUMN_CS_DEFER_CYCLES},
    {"mean_combined_cycles", COLUMN_COMBINED_CYCLES},
};

typedef struct kernel_stats {
  char *name;
  const char *target;   /* one of the static target names */
  const char *input;    /* the command-line FILE it came from (argv outlives the report) */
  int compiled;         /* input was a source; line numbers then point into a deleted temporary */
  unsigned long line;
  uint64_t values[COLUMN_COUNT]; /* the numeric columns; KERNEL and TARGET stay 0 */
  uint64_t baseline_bytes;       /* baseline + lds: everything the driver's routine swaps */
  double normalized[TECHNIQUE_COUNT];
  int has_ckpt_ratio; /* ckpt > 0: a kernel whose minimum context is empty has no ratio */
  double ctxback_vs_ckpt;
  double mean_cycles[LATENCY_COUNT];
} kernel_stats;

typedef struct kernel_list {
  kernel_stats *kernels;
  size_t count;
  size_t capacity;
} kernel_list;

typedef struct report_average {
  size_t kernel_count;
  double normalized[TECHNIQUE_COUNT];
  size_t ratio_count; /* kernels that have a CTXBack/CKPT ratio */
  double ctxback_vs_ckpt;
} report_average;

typedef enum output_format { OUTPUT_TABLE, OUTPUT_CSV, OUTPUT_JSON } output_format;

typedef struct compile_options {
  const char *clang;
  const char *llc;
  const char *plugin;
  const char *cuda_path;
  int osrb;
  const char *check_trials; /* validated decimal, or NULL */
} compile_options;

typedef struct line_reader {
  FILE *stream;
  const char *origin;
  char *text;
  size_t capacity;
  size_t length;
  unsigned long number;
} line_reader;

typedef enum read_result { READ_LINE, READ_END, READ_FAILED } read_result;

typedef enum source_language {
  SOURCE_UNKNOWN,
  SOURCE_OPENCL,
  SOURCE_CUDA,
  SOURCE_LLVM_IR,
  SOURCE_MIR
} source_language;

static void report_error(const char *origin, unsigned long line, unsigned long column, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

/* Every diagnostic names where it came from the way compilers do, so editors
 * can jump to it; line and column are left out when 0 (unknown). */
static void report_error(const char *origin, unsigned long line, unsigned long column, const char *format, ...) {
  va_list arguments;
  fprintf(stderr, PROGRAM_NAME ": ");
  if (origin) {
    fputs(origin, stderr);
    if (line)
      fprintf(stderr, ":%lu", line);
    if (line && column)
      fprintf(stderr, ":%lu", column);
    fputs(": ", stderr);
  }
  va_start(arguments, format);
  vfprintf(stderr, format, arguments);
  va_end(arguments);
  fputc('\n', stderr);
}

static char *format_string(const char *format, ...) __attribute__((format(printf, 1, 2)));

static char *format_string(const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  int length = vsnprintf(NULL, 0, format, arguments);
  va_end(arguments);
  if (length < 0)
    return NULL;
  char *text = malloc((size_t)length + 1);
  if (!text)
    return NULL;
  va_start(arguments, format);
  vsnprintf(text, (size_t)length + 1, format, arguments);
  va_end(arguments);
  return text;
}

/* ---- Reading statistics ------------------------------------------------- */

typedef enum number_result { NUMBER_OK, NUMBER_INVALID, NUMBER_OVERFLOW } number_result;

/* Strict on purpose: strtoull would accept signs, blanks and "0x", and wrap
 * "-1" into a huge count. */
static number_result parse_unsigned(const char *text, size_t length, uint64_t *value) {
  uint64_t result = 0;
  if (length == 0)
    return NUMBER_INVALID;
  for (size_t i = 0; i < length; i++) {
    if (text[i] < '0' || text[i] > '9')
      return NUMBER_INVALID;
    unsigned digit = (unsigned)(text[i] - '0');
    if (result > (UINT64_MAX - digit) / 10)
      return NUMBER_OVERFLOW;
    result = result * 10 + digit;
  }
  *value = result;
  return NUMBER_OK;
}

static read_result read_line(line_reader *reader) {
  errno = 0;
  ssize_t length = getline(&reader->text, &reader->capacity, reader->stream);
  if (length < 0) {
    if (ferror(reader->stream)) {
      report_error(reader->origin, reader->number + 1, 0, "cannot read: %s", strerror(errno ? errno : EIO));
      return READ_FAILED;
    }
    return READ_END;
  }
  reader->number++;
  reader->length = (size_t)length;
  if (reader->length > 0 && reader->text[reader->length - 1] == '\n')
    reader->text[--reader->length] = '\0';
  /* Tolerate files that passed through a Windows editor. */
  if (reader->length > 0 && reader->text[reader->length - 1] == '\r')
    reader->text[--reader->length] = '\0';
  if (memchr(reader->text, '\0', reader->length)) {
    report_error(reader->origin, reader->number, 0, "contains a NUL byte: not a text statistics file");
    return READ_FAILED;
  }
  return READ_LINE;
}

static int starts_with(const char *text, const char *prefix) { return strncmp(text, prefix, strlen(prefix)) == 0; }

static int check_version_line(const line_reader *reader) {
  if (strcmp(reader->text, STATS_VERSION_LINE) == 0)
    return 0;
  report_error(reader->origin, reader->number, 0, "unsupported statistics version line \"%.80s\" (this " PROGRAM_NAME
               " reads \"" STATS_VERSION_LINE "\")", reader->text);
  return -1;
}

static int check_header_line(const line_reader *reader) {
  const char *field = reader->text;
  unsigned long column = 1;
  for (size_t index = 0; index < COLUMN_COUNT; index++) {
    size_t length = strcspn(field, "\t");
    size_t expected = strlen(column_names[index]);
    if (length != expected || memcmp(field, column_names[index], length) != 0) {
      report_error(reader->origin, reader->number, column, "header column %zu is \"%.*s\", expected \"%s\"",
                   index + 1, (int)(length > 80 ? 80 : length), field, column_names[index]);
      return -1;
    }
    field += length;
    column += (unsigned long)length;
    if (index + 1 < COLUMN_COUNT) {
      if (*field != '\t') {
        report_error(reader->origin, reader->number, 0, "header has %zu columns, expected %d", index + 1,
                     COLUMN_COUNT);
        return -1;
      }
      field++;
      column++;
    }
  }
  if (*field != '\0') {
    report_error(reader->origin, reader->number, column, "header has more than %d columns", COLUMN_COUNT);
    return -1;
  }
  return 0;
}

static int kernel_list_append(kernel_list *list, kernel_stats **added) {
  if (list->count == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 16;
    if (capacity > SIZE_MAX / sizeof *list->kernels)
      return -1;
    kernel_stats *kernels = realloc(list->kernels, capacity * sizeof *kernels);
    if (!kernels)
      return -1;
    list->kernels = kernels;
    list->capacity = capacity;
  }
  *added = &list->kernels[list->count++];
  memset(*added, 0, sizeof **added);
  return 0;
}

static void kernel_list_free(kernel_list *list) {
  for (size_t i = 0; i < list->count; i++)
    free(list->kernels[i].name);
  free(list->kernels);
  list->kernels = NULL;
  list->count = list->capacity = 0;
}

/* Fills the Fig. 7 values; rejects rows whose normalisation would divide by
 * zero or that contradict themselves. */
static int derive_kernel_metrics(kernel_stats *kernel, const char *origin) {
  const uint64_t *values = kernel->values;
  if (values[COLUMN_POINTS] == 0) {
    report_error(origin, kernel->line, 0, "kernel %s: points is 0: no preemption point was analysed", kernel->name);
    return -1;
  }
  if (values[COLUMN_BASELINE] > UINT64_MAX - values[COLUMN_LDS]) {
    report_error(origin, kernel->line, 0, "kernel %s: baseline + lds overflows 64 bits", kernel->name);
    return -1;
  }
  kernel->baseline_bytes = values[COLUMN_BASELINE] + values[COLUMN_LDS];
  if (kernel->baseline_bytes == 0) {
    report_error(origin, kernel->line, 0, "kernel %s: baseline + lds is 0: nothing to normalise by", kernel->name);
    return -1;
  }
  if (values[COLUMN_CHECK_FAILURES] > values[COLUMN_CHECKED]) {
    report_error(origin, kernel->line, 0, "kernel %s: check_failures (%" PRIu64 ") exceeds checked (%" PRIu64 ")",
                 kernel->name, values[COLUMN_CHECK_FAILURES], values[COLUMN_CHECKED]);
    return -1;
  }

  double points = (double)values[COLUMN_POINTS];
  double lds = (double)values[COLUMN_LDS];
  /* Fig. 7: the mean context per point plus the LDS, which no technique can
   * leave out, over what the driver's routine swaps. */
  for (size_t t = 0; t < TECHNIQUE_COUNT; t++)
    kernel->normalized[t] = ((double)values[techniques[t].column] / points + lds) / (double)kernel->baseline_bytes;
  kernel->has_ckpt_ratio = values[COLUMN_CKPT] > 0;
  if (kernel->has_ckpt_ratio)
    kernel->ctxback_vs_ckpt = (double)values[COLUMN_CTXBACK] / (double)values[COLUMN_CKPT];
  for (size_t l = 0; l < LATENCY_COUNT; l++)
    kernel->mean_cycles[l] = (double)values[latencies[l].column] / points;
  return 0;
}

static int parse_kernel_row(const line_reader *reader, kernel_stats *kernel) {
  const char *fields[COLUMN_COUNT];
  size_t lengths[COLUMN_COUNT];
  size_t offsets[COLUMN_COUNT];
  size_t field_count = 0;
  size_t start = 0;
  for (size_t i = 0; i <= reader->length; i++) {
    if (i < reader->length && reader->text[i] != '\t')
      continue;
    if (field_count < COLUMN_COUNT) {
      fields[field_count] = reader->text + start;
      lengths[field_count] = i - start;
      offsets[field_count] = start;
    }
    field_count++;
    start = i + 1;
  }
  if (field_count != COLUMN_COUNT) {
    report_error(reader->origin, reader->number, 0, "%zu tab-separated field%s, expected %d", field_count,
                 field_count == 1 ? "" : "s", COLUMN_COUNT);
    return -1;
  }

  if (lengths[COLUMN_KERNEL] == 0) {
    report_error(reader->origin, reader->number, 1, "empty kernel name");
    return -1;
  }
  static const char *const target_names[] = {"amdgcn", "nvptx64"};
  kernel->target = NULL;
  for (size_t t = 0; t < sizeof target_names / sizeof *target_names; t++)
    if (lengths[COLUMN_TARGET] == strlen(target_names[t]) &&
        memcmp(fields[COLUMN_TARGET], target_names[t], lengths[COLUMN_TARGET]) == 0)
      kernel->target = target_names[t];
  if (!kernel->target) {
    report_error(reader->origin, reader->number, offsets[COLUMN_TARGET] + 1,
                 "target \"%.*s\" is neither amdgcn nor nvptx64",
                 (int)(lengths[COLUMN_TARGET] > 80 ? 80 : lengths[COLUMN_TARGET]), fields[COLUMN_TARGET]);
    return -1;
  }
  for (size_t c = COLUMN_POINTS; c < COLUMN_COUNT; c++) {
    number_result result = parse_unsigned(fields[c], lengths[c], &kernel->values[c]);
    if (result != NUMBER_OK) {
      report_error(reader->origin, reader->number, offsets[c] + 1, "field %s: \"%.*s\" %s", column_names[c],
                   (int)(lengths[c] > 80 ? 80 : lengths[c]), fields[c],
                   result == NUMBER_OVERFLOW ? "does not fit in 64 bits" : "is not an unsigned decimal");
      return -1;
    }
  }
  kernel->name = malloc(lengths[COLUMN_KERNEL] + 1);
  if (!kernel->name) {
    report_error(reader->origin, reader->number, 0, "out of memory");
    return -1;
  }
  memcpy(kernel->name, fields[COLUMN_KERNEL], lengths[COLUMN_KERNEL]);
  kernel->name[lengths[COLUMN_KERNEL]] = '\0';
  kernel->line = reader->number;
  return derive_kernel_metrics(kernel, reader->origin);
}

/* Reads a statistics file whose first line the reader already holds. */
static int read_statistics(line_reader *reader, const char *input, int compiled, kernel_list *kernels) {
  if (check_version_line(reader) != 0)
    return -1;
  read_result result = read_line(reader);
  if (result == READ_FAILED)
    return -1;
  if (result == READ_END) {
    report_error(reader->origin, reader->number + 1, 0, "missing header line after the version line");
    return -1;
  }
  if (check_header_line(reader) != 0)
    return -1;
  while ((result = read_line(reader)) == READ_LINE) {
    kernel_stats *kernel;
    if (kernel_list_append(kernels, &kernel) != 0) {
      report_error(reader->origin, reader->number, 0, "out of memory");
      return -1;
    }
    kernel->input = input;
    kernel->compiled = compiled;
    if (parse_kernel_row(reader, kernel) != 0) {
      free(kernel->name);
      kernels->count--;
      return -1;
    }
  }
  return result == READ_END ? 0 : -1;
}

/* ---- Compiling a source -------------------------------------------------- */

static source_language language_of(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  if (!dot)
    return SOURCE_UNKNOWN;
  if (strcmp(dot, ".cl") == 0)
    return SOURCE_OPENCL;
  if (strcmp(dot, ".cu") == 0)
    return SOURCE_CUDA;
  if (strcmp(dot, ".ll") == 0)
    return SOURCE_LLVM_IR;
  if (strcmp(dot, ".mir") == 0)
    return SOURCE_MIR;
  return SOURCE_UNKNOWN;
}

static const char *output_suffix(source_language language) {
  switch (language) {
  case SOURCE_OPENCL:
    return ".o";
  case SOURCE_MIR:
    return ".out.mir";
  default:
    return ".s";
  }
}

enum { COMMAND_MAX_ARGUMENTS = 40, COMMAND_MAX_OWNED = 12 };

typedef struct command {
  const char *argv[COMMAND_MAX_ARGUMENTS + 1];
  size_t argc;
  char *owned[COMMAND_MAX_OWNED];
  size_t owned_count;
  int failed; /* an allocation failed; checked once, before running */
} command;

static void command_add(command *cmd, const char *argument) {
  if (!argument || cmd->argc == COMMAND_MAX_ARGUMENTS) {
    cmd->failed = 1;
    return;
  }
  cmd->argv[cmd->argc++] = argument;
  cmd->argv[cmd->argc] = NULL;
}

/* Takes ownership of a format_string result, which may be NULL. */
static void command_add_owned(command *cmd, char *argument) {
  if (!argument || cmd->owned_count == COMMAND_MAX_OWNED) {
    free(argument);
    cmd->failed = 1;
    return;
  }
  cmd->owned[cmd->owned_count++] = argument;
  command_add(cmd, argument);
}

/* clang hands the pass's options to LLVM with -mllvm; llc takes them as they are. */
static void command_add_pass_option(command *cmd, int through_clang, char *option) {
  if (through_clang)
    command_add(cmd, "-mllvm");
  command_add_owned(cmd, option);
}

static void command_free(command *cmd) {
  for (size_t i = 0; i < cmd->owned_count; i++)
    free(cmd->owned[i]);
  cmd->owned_count = 0;
  cmd->argc = 0;
}

static void print_command(const command *cmd) {
  fputs(PROGRAM_NAME ": command:", stderr);
  for (size_t i = 0; i < cmd->argc; i++)
    fprintf(stderr, " %s", cmd->argv[i]);
  fputc('\n', stderr);
}

/* The flags are the ones §V uses (-O3, gfx906 for the AMD kernels); the
 * statistics land next to the outputs in the temporary directory. */
static int build_compile_command(source_language language, const char *input, const char *directory,
                                 const char *stem, const compile_options *options, command *cmd) {
  char *output_stem = format_string("%s/%s", directory, stem);
  if (!output_stem)
    return -1;
  /* A file named like an option would be taken for one by clang and llc. */
  char *input_argument = input[0] == '-' ? format_string("./%s", input) : format_string("%s", input);
  int is_clang = language == SOURCE_OPENCL || language == SOURCE_CUDA;

  memset(cmd, 0, sizeof *cmd);
  switch (language) {
  case SOURCE_OPENCL:
    command_add(cmd, options->clang);
    command_add(cmd, "-x");
    command_add(cmd, "cl");
    command_add(cmd, "-cl-std=CL2.0");
    command_add(cmd, "-target");
    command_add(cmd, "amdgcn-amd-amdhsa");
    command_add(cmd, "-mcpu=gfx906");
    command_add(cmd, "-nogpulib");
    command_add(cmd, "-O3");
    command_add(cmd, "-c");
    break;
  case SOURCE_CUDA:
    command_add(cmd, options->clang);
    command_add(cmd, "-x");
    command_add(cmd, "cuda");
    command_add(cmd, "--cuda-device-only");
    command_add(cmd, "--cuda-gpu-arch=sm_90");
    command_add_owned(cmd, format_string("--cuda-path=%s", options->cuda_path));
    command_add(cmd, "-Wno-unknown-cuda-version");
    command_add(cmd, "-O3");
    command_add(cmd, "-S");
    break;
  case SOURCE_LLVM_IR:
  case SOURCE_MIR:
    command_add(cmd, options->llc);
    command_add(cmd, "-load");
    command_add(cmd, options->plugin);
    break;
  case SOURCE_UNKNOWN:
    cmd->failed = 1;
    break;
  }
  if (is_clang)
    command_add_owned(cmd, format_string("-fpass-plugin=%s", options->plugin));
  const char *run_pass = language == SOURCE_MIR ? "-run-pass=preempt-context-flashback" : "-preempt-ctxback";
  command_add_pass_option(cmd, is_clang, format_string("%s", run_pass));
  command_add_pass_option(cmd, is_clang, format_string("-preempt-ctxback-output=%s", output_stem));
  if (options->osrb)
    command_add_pass_option(cmd, is_clang, format_string("-preempt-ctxback-osrb"));
  if (options->check_trials)
    command_add_pass_option(cmd, is_clang, format_string("-preempt-ctxback-check=%s", options->check_trials));
  if (language == SOURCE_LLVM_IR)
    command_add(cmd, "-O3");
  command_add(cmd, "-o");
  command_add_owned(cmd, format_string("%s%s", output_stem, output_suffix(language)));
  command_add_owned(cmd, input_argument);
  free(output_stem);
  if (cmd->failed) {
    command_free(cmd);
    return -1;
  }
  return 0;
}

static int run_command(const command *cmd, const char *input) {
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) {
    report_error(input, 0, 0, "cannot prepare to run %s", cmd->argv[0]);
    return -1;
  }
  /* The compiler's chatter must not end up inside --json or --csv output. */
  int status = posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  pid_t child = 0;
  if (status == 0)
    status = posix_spawnp(&child, cmd->argv[0], &actions, NULL, (char *const *)cmd->argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (status != 0) {
    report_error(input, 0, 0, "cannot run %s: %s (set PREEMPT_CLANG or PREEMPT_LLC)", cmd->argv[0], strerror(status));
    return -1;
  }
  int wait_status;
  while (waitpid(child, &wait_status, 0) < 0) {
    if (errno != EINTR) {
      report_error(input, 0, 0, "cannot wait for %s: %s", cmd->argv[0], strerror(errno));
      return -1;
    }
  }
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0)
    return 0;
  if (WIFEXITED(wait_status))
    report_error(input, 0, 0, "the compiler failed with exit status %d", WEXITSTATUS(wait_status));
  else if (WIFSIGNALED(wait_status))
    report_error(input, 0, 0, "the compiler was killed by signal %d", WTERMSIG(wait_status));
  else
    report_error(input, 0, 0, "the compiler stopped abnormally (wait status %d)", wait_status);
  print_command(cmd);
  fputs(PROGRAM_NAME ": note: if it calls the -preempt-ctxback options unknown, the plugin has no CTXBack pass\n",
        stderr);
  return -1;
}

static int remove_tree_entry(const char *path, const struct stat *info, int type, struct FTW *walk) {
  (void)info;
  (void)type;
  (void)walk;
  return remove(path);
}

static void remove_directory(const char *directory) {
  if (nftw(directory, remove_tree_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    report_error(directory, 0, 0, "warning: cannot remove the temporary directory: %s", strerror(errno));
}

/* The stem names the outputs inside our own directory, so only the base name
 * matters; a name that is only an extension still needs some stem. */
static char *source_stem(const char *input) {
  const char *base = strrchr(input, '/');
  base = base ? base + 1 : input;
  const char *dot = strrchr(base, '.');
  size_t length = dot ? (size_t)(dot - base) : strlen(base);
  if (length == 0)
    return format_string("source");
  return format_string("%.*s", (int)length, base);
}

static int load_compiled_statistics(const char *statistics_path, const char *input, kernel_list *kernels) {
  char *origin = format_string("%s (statistics)", input);
  if (!origin) {
    report_error(input, 0, 0, "out of memory");
    return -1;
  }
  FILE *stream = fopen(statistics_path, "r");
  if (!stream) {
    int error = errno;
    if (error == ENOENT)
      report_error(input, 0, 0, "the compiler succeeded but wrote no statistics: the CTXBack pass did not run "
                   "(does the plugin have the preempt-ctxback pass?)");
    else
      report_error(input, 0, 0, "cannot open the statistics %s: %s", statistics_path, strerror(error));
    free(origin);
    return -1;
  }
  line_reader reader = {.stream = stream, .origin = origin};
  int status = -1;
  read_result first = read_line(&reader);
  if (first == READ_END)
    report_error(origin, 1, 0, "the pass wrote an empty statistics file");
  else if (first == READ_LINE)
    status = read_statistics(&reader, input, 1, kernels);
  free(reader.text);
  fclose(stream);
  free(origin);
  return status;
}

static int compile_and_load(source_language language, const char *input, const compile_options *options,
                            kernel_list *kernels) {
  const char *temporary_root = getenv("TMPDIR");
  if (!temporary_root || !*temporary_root)
    temporary_root = "/tmp";
  char *directory = format_string("%s/" PROGRAM_NAME ".XXXXXX", temporary_root);
  char *stem = source_stem(input);
  if (!directory || !stem) {
    report_error(input, 0, 0, "out of memory");
    free(directory);
    free(stem);
    return -1;
  }
  if (!mkdtemp(directory)) {
    report_error(input, 0, 0, "cannot create a temporary directory under %s: %s", temporary_root, strerror(errno));
    free(directory);
    free(stem);
    return -1;
  }

  int status = -1;
  command cmd;
  char *statistics_path = format_string("%s/%s" STATS_SUFFIX, directory, stem);
  if (!statistics_path || build_compile_command(language, input, directory, stem, options, &cmd) != 0) {
    report_error(input, 0, 0, "out of memory");
  } else {
    if (run_command(&cmd, input) == 0)
      status = load_compiled_statistics(statistics_path, input, kernels);
    command_free(&cmd);
  }
  remove_directory(directory);
  free(statistics_path);
  free(directory);
  free(stem);
  return status;
}

/* ---- Inputs ------------------------------------------------------------- */

/* A statistics file is known by its first line, whatever its name, so that
 * the pass's output can be renamed or piped through other tools. */
static int load_input(const char *input, const compile_options *options, kernel_list *kernels) {
  FILE *stream = fopen(input, "r");
  if (!stream) {
    report_error(input, 0, 0, "cannot open: %s", strerror(errno));
    return -1;
  }
  line_reader reader = {.stream = stream, .origin = input};
  read_result first = read_line(&reader);
  int is_statistics = first == READ_LINE && starts_with(reader.text, STATS_MAGIC);
  int status = -1;
  if (is_statistics)
    status = read_statistics(&reader, input, 0, kernels);
  free(reader.text);
  fclose(stream);
  if (is_statistics || first == READ_FAILED)
    return status;

  source_language language = language_of(input);
  if (language == SOURCE_UNKNOWN) {
    report_error(input, 1, 0, "neither a statistics file (its first line is not \"" STATS_VERSION_LINE "\") "
                 "nor a .cl, .cu, .ll or .mir source");
    return -1;
  }
  return compile_and_load(language, input, options, kernels);
}

/* ---- Output ------------------------------------------------------------- */

/* The paper averages the normalised values over benchmarks (not the bytes),
 * so a large kernel does not outweigh the others. */
static void compute_average(const kernel_list *kernels, report_average *average) {
  memset(average, 0, sizeof *average);
  average->kernel_count = kernels->count;
  for (size_t k = 0; k < kernels->count; k++) {
    const kernel_stats *kernel = &kernels->kernels[k];
    for (size_t t = 0; t < TECHNIQUE_COUNT; t++)
      average->normalized[t] += kernel->normalized[t];
    if (kernel->has_ckpt_ratio) {
      average->ctxback_vs_ckpt += kernel->ctxback_vs_ckpt;
      average->ratio_count++;
    }
  }
  if (average->kernel_count)
    for (size_t t = 0; t < TECHNIQUE_COUNT; t++)
      average->normalized[t] /= (double)average->kernel_count;
  if (average->ratio_count)
    average->ctxback_vs_ckpt /= (double)average->ratio_count;
}

typedef enum table_position {
  TABLE_KERNEL,
  TABLE_TARGET,
  TABLE_POINTS,
  TABLE_BASELINE,
  TABLE_FIRST_TECHNIQUE,
  TABLE_CKPT_RATIO = TABLE_FIRST_TECHNIQUE + TECHNIQUE_COUNT,
  TABLE_FIRST_LATENCY,
  TABLE_ROUTINES = TABLE_FIRST_LATENCY + LATENCY_COUNT,
  TABLE_BACKUP,
  TABLE_CHECKS,
  TABLE_COLUMNS
} table_position;

/* A cell holds at most two 20-digit numbers and a separator. */
enum { TABLE_CELL = 48, TABLE_GAP = 2 };

typedef struct table_column {
  const char *group; /* printed above the first column of a run sharing it */
  const char *title;
  int left_aligned;
} table_column;

#define CONTEXT_GROUP "context, % of BASELINE"
#define LATENCY_GROUP "mean preemption cycles"

static const table_column table_columns[TABLE_COLUMNS] = {
    [TABLE_KERNEL] = {NULL, "kernel", 1},
    [TABLE_TARGET] = {NULL, "target", 1},
    [TABLE_POINTS] = {NULL, "points", 0},
    [TABLE_BASELINE] = {"bytes/warp", "BASELINE", 0},
    [TABLE_FIRST_TECHNIQUE + TECHNIQUE_LIVE] = {CONTEXT_GROUP, "LIVE", 0},
    [TABLE_FIRST_TECHNIQUE + TECHNIQUE_CKPT] = {CONTEXT_GROUP, "CKPT", 0},
    [TABLE_FIRST_TECHNIQUE + TECHNIQUE_CS_DEFER] = {CONTEXT_GROUP, "CS-Defer", 0},
    [TABLE_FIRST_TECHNIQUE + TECHNIQUE_CTXBACK] = {CONTEXT_GROUP, "CTXBack", 0},
    [TABLE_FIRST_TECHNIQUE + TECHNIQUE_COMBINED] = {CONTEXT_GROUP, "CTXBack+CS-Defer", 0},
    [TABLE_CKPT_RATIO] = {NULL, "CTXBack/CKPT", 0},
    [TABLE_FIRST_LATENCY + LATENCY_CTXBACK] = {LATENCY_GROUP, "CTXBack", 0},
    [TABLE_FIRST_LATENCY + LATENCY_CS_DEFER] = {LATENCY_GROUP, "CS-Defer", 0},
    [TABLE_FIRST_LATENCY + LATENCY_COMBINED] = {LATENCY_GROUP, "combined", 0},
    [TABLE_ROUTINES] = {"routines", "pre/res", 0},
    [TABLE_BACKUP] = {"OSRB", "backup", 0},
    [TABLE_CHECKS] = {NULL, "checks", 1},
};

typedef struct table_row {
  char *label; /* the kernel column, sanitised; owned (cells[TABLE_KERNEL] is unused) */
  char cells[TABLE_COLUMNS][TABLE_CELL];
} table_row;

/* Control characters in a kernel name would let a hostile file rewrite the terminal. */
static char *printable_copy(const char *text) {
  char *copy = format_string("%s", text);
  if (copy)
    for (char *c = copy; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f)
        *c = '?';
  return copy;
}

static void format_percent(char *cell, double fraction) { snprintf(cell, TABLE_CELL, "%.1f%%", 100.0 * fraction); }

static int fill_kernel_row(const kernel_stats *kernel, table_row *row) {
  const uint64_t *values = kernel->values;
  row->label = printable_copy(kernel->name);
  if (!row->label)
    return -1;
  snprintf(row->cells[TABLE_TARGET], TABLE_CELL, "%s", kernel->target);
  snprintf(row->cells[TABLE_POINTS], TABLE_CELL, "%" PRIu64, values[COLUMN_POINTS]);
  snprintf(row->cells[TABLE_BASELINE], TABLE_CELL, "%" PRIu64 " B", kernel->baseline_bytes);
  for (size_t t = 0; t < TECHNIQUE_COUNT; t++)
    format_percent(row->cells[TABLE_FIRST_TECHNIQUE + t], kernel->normalized[t]);
  if (kernel->has_ckpt_ratio)
    snprintf(row->cells[TABLE_CKPT_RATIO], TABLE_CELL, "%.2f", kernel->ctxback_vs_ckpt);
  else
    snprintf(row->cells[TABLE_CKPT_RATIO], TABLE_CELL, "-");
  for (size_t l = 0; l < LATENCY_COUNT; l++)
    snprintf(row->cells[TABLE_FIRST_LATENCY + l], TABLE_CELL, "%.1f", kernel->mean_cycles[l]);
  snprintf(row->cells[TABLE_ROUTINES], TABLE_CELL, "%" PRIu64 "/%" PRIu64, values[COLUMN_PREEMPT_ROUTINES],
           values[COLUMN_RESUME_ROUTINES]);
  snprintf(row->cells[TABLE_BACKUP], TABLE_CELL, "%" PRIu64, values[COLUMN_BACKUP_INSTRUCTIONS]);
  if (values[COLUMN_CHECKED] == 0)
    snprintf(row->cells[TABLE_CHECKS], TABLE_CELL, "-");
  else if (values[COLUMN_CHECK_FAILURES] == 0)
    snprintf(row->cells[TABLE_CHECKS], TABLE_CELL, "%" PRIu64 " ok", values[COLUMN_CHECKED]);
  else
    snprintf(row->cells[TABLE_CHECKS], TABLE_CELL, "%" PRIu64 " FAILED", values[COLUMN_CHECK_FAILURES]);
  return 0;
}

/* Only the normalised columns have an average: bytes and cycles of different
 * kernels do not add up to anything meaningful. */
static int fill_average_row(const report_average *average, table_row *row) {
  row->label = format_string("average");
  if (!row->label)
    return -1;
  for (size_t t = 0; t < TECHNIQUE_COUNT; t++)
    format_percent(row->cells[TABLE_FIRST_TECHNIQUE + t], average->normalized[t]);
  if (average->ratio_count)
    snprintf(row->cells[TABLE_CKPT_RATIO], TABLE_CELL, "%.2f", average->ctxback_vs_ckpt);
  return 0;
}

static const char *row_cell(const table_row *row, size_t column) {
  return column == TABLE_KERNEL ? row->label : row->cells[column];
}

/* Pads lazily: spaces are written only when text follows, so no line ends in blanks. */
static void print_padded(size_t *pending_spaces, const char *text, size_t width, int left_aligned) {
  size_t length = strlen(text);
  size_t padding = width > length ? width - length : 0;
  if (!left_aligned)
    *pending_spaces += padding;
  if (length) {
    printf("%*s%s", (int)*pending_spaces, "", text);
    *pending_spaces = 0;
  }
  if (left_aligned)
    *pending_spaces += padding;
}

static void print_table(const table_row *rows, size_t row_count) {
  size_t widths[TABLE_COLUMNS];
  for (size_t c = 0; c < TABLE_COLUMNS; c++) {
    widths[c] = strlen(table_columns[c].title);
    for (size_t r = 0; r < row_count; r++) {
      size_t length = strlen(row_cell(&rows[r], c));
      if (length > widths[c])
        widths[c] = length;
    }
  }
  /* A group title wider than its columns widens the last of them. */
  for (size_t first = 0; first < TABLE_COLUMNS;) {
    size_t last = first;
    while (last + 1 < TABLE_COLUMNS && table_columns[first].group &&
           table_columns[last + 1].group == table_columns[first].group)
      last++;
    if (table_columns[first].group) {
      size_t span = 0;
      for (size_t c = first; c <= last; c++)
        span += widths[c] + (c > first ? TABLE_GAP : 0);
      size_t needed = strlen(table_columns[first].group);
      if (span < needed)
        widths[last] += needed - span;
    }
    first = last + 1;
  }

  size_t pending = 0;
  for (size_t c = 0; c < TABLE_COLUMNS; c++) {
    int starts_group = table_columns[c].group && (c == 0 || table_columns[c - 1].group != table_columns[c].group);
    print_padded(&pending, starts_group ? table_columns[c].group : "", widths[c], 1);
    pending += TABLE_GAP;
  }
  putchar('\n');
  pending = 0;
  for (size_t c = 0; c < TABLE_COLUMNS; c++) {
    print_padded(&pending, table_columns[c].title, widths[c], table_columns[c].left_aligned);
    pending += TABLE_GAP;
  }
  putchar('\n');
  for (size_t r = 0; r < row_count; r++) {
    pending = 0;
    for (size_t c = 0; c < TABLE_COLUMNS; c++) {
      print_padded(&pending, row_cell(&rows[r], c), widths[c], table_columns[c].left_aligned);
      pending += TABLE_GAP;
    }
    putchar('\n');
  }
}

static int print_text_report(const kernel_list *kernels, const report_average *average) {
  size_t row_count = kernels->count + 1;
  table_row *rows = calloc(row_count, sizeof *rows);
  if (!rows)
    return -1;
  int status = 0;
  for (size_t k = 0; k < kernels->count && status == 0; k++)
    status = fill_kernel_row(&kernels->kernels[k], &rows[k]);
  if (status == 0)
    status = fill_average_row(average, &rows[kernels->count]);
  if (status == 0) {
    print_table(rows, row_count);
    printf("\nCTXBack: context %+.1f%% vs BASELINE on average", 100.0 * (average->normalized[TECHNIQUE_CTXBACK] - 1.0));
    if (average->ratio_count)
      printf(", %.2fx CKPT", average->ctxback_vs_ckpt);
    putchar('\n');
  }
  for (size_t r = 0; r < row_count; r++)
    free(rows[r].label);
  free(rows);
  return status;
}

/* 0, or -1 as soon as stdout refuses a kernel's name or file; the caller reports it with the other write errors. */
static int print_json_report(const kernel_list *kernels, const report_average *average) {
  printf("{\"kernels\":[");
  for (size_t k = 0; k < kernels->count; k++) {
    const kernel_stats *kernel = &kernels->kernels[k];
    printf(k ? ",\n  {" : "\n  {");
    printf("\"kernel\":");
    if (preempt_json_write_string(stdout, kernel->name) != 0)
      return -1;
    printf(",\"target\":\"%s\",\"file\":", kernel->target);
    if (preempt_json_write_string(stdout, kernel->input) != 0)
      return -1;
    for (size_t c = COLUMN_POINTS; c < COLUMN_COUNT; c++)
      printf(",\"%s\":%" PRIu64, column_names[c], kernel->values[c]);
    printf(",\"baseline_bytes\":%" PRIu64 ",\"norm_baseline\":1.0", kernel->baseline_bytes);
    for (size_t t = 0; t < TECHNIQUE_COUNT; t++)
      printf(",\"%s\":%.6f", techniques[t].json_name, kernel->normalized[t]);
    if (kernel->has_ckpt_ratio)
      printf(",\"ctxback_vs_ckpt\":%.6f", kernel->ctxback_vs_ckpt);
    else
      printf(",\"ctxback_vs_ckpt\":null");
    for (size_t l = 0; l < LATENCY_COUNT; l++)
      printf(",\"%s\":%.6f", latencies[l].json_name, kernel->mean_cycles[l]);
    putchar('}');
  }
  printf("\n],\n\"average\":{\"kernels\":%zu,\"norm_baseline\":1.0", average->kernel_count);
  for (size_t t = 0; t < TECHNIQUE_COUNT; t++)
    printf(",\"%s\":%.6f", techniques[t].json_name, average->normalized[t]);
  if (average->ratio_count)
    printf(",\"ctxback_vs_ckpt\":%.6f", average->ctxback_vs_ckpt);
  else
    printf(",\"ctxback_vs_ckpt\":null");
  printf("}}\n");
  return 0;
}

/* RFC 4180 quoting, only where a field needs it. */
static void print_csv_field(const char *text) {
  if (!strpbrk(text, ",\"\r\n")) {
    fputs(text, stdout);
    return;
  }
  putchar('"');
  for (const char *c = text; *c; c++) {
    if (*c == '"')
      putchar('"');
    putchar(*c);
  }
  putchar('"');
}

static void print_csv_report(const kernel_list *kernels) {
  printf("kernel,target");
  for (size_t c = COLUMN_POINTS; c < COLUMN_COUNT; c++)
    printf(",%s", column_names[c]);
  printf(",baseline_bytes");
  for (size_t t = 0; t < TECHNIQUE_COUNT; t++)
    printf(",%s", techniques[t].json_name);
  printf(",ctxback_vs_ckpt");
  for (size_t l = 0; l < LATENCY_COUNT; l++)
    printf(",%s", latencies[l].json_name);
  printf(",file\n");
  for (size_t k = 0; k < kernels->count; k++) {
    const kernel_stats *kernel = &kernels->kernels[k];
    print_csv_field(kernel->name);
    printf(",%s", kernel->target);
    for (size_t c = COLUMN_POINTS; c < COLUMN_COUNT; c++)
      printf(",%" PRIu64, kernel->values[c]);
    printf(",%" PRIu64, kernel->baseline_bytes);
    for (size_t t = 0; t < TECHNIQUE_COUNT; t++)
      printf(",%.6f", kernel->normalized[t]);
    if (kernel->has_ckpt_ratio)
      printf(",%.6f", kernel->ctxback_vs_ckpt);
    else
      putchar(',');
    for (size_t l = 0; l < LATENCY_COUNT; l++)
      printf(",%.6f", kernel->mean_cycles[l]);
    putchar(',');
    print_csv_field(kernel->input);
    putchar('\n');
  }
}

/* A failed check means a routine would corrupt a preempted kernel: the
 * numbers are still shown, but the run must not pass. */
static size_t report_check_failures(const kernel_list *kernels) {
  size_t failed = 0;
  for (size_t k = 0; k < kernels->count; k++) {
    const kernel_stats *kernel = &kernels->kernels[k];
    if (kernel->values[COLUMN_CHECK_FAILURES] == 0)
      continue;
    report_error(kernel->input, kernel->compiled ? 0 : kernel->line, 0,
                 "kernel %s: %" PRIu64 " of %" PRIu64 " routine checks FAILED", kernel->name,
                 kernel->values[COLUMN_CHECK_FAILURES], kernel->values[COLUMN_CHECKED]);
    failed++;
  }
  return failed;
}

/* ---- Command line ------------------------------------------------------- */

static void print_usage(FILE *stream) {
  fputs("usage: " PROGRAM_NAME " [--json | --csv] [--osrb] [--check=N] FILE...\n"
        "\n"
        "Prints the context each kernel saves on preemption under LIVE, CKPT, CS-Defer, CTXBack and\n"
        "CTXBack+CS-Defer, as a share of BASELINE (all registers plus LDS), as in CTXBack's Fig. 7.\n"
        "\n"
        "FILE is a statistics file of the CTXBack pass (first line \"" STATS_VERSION_LINE "\"),\n"
        "or a source compiled with the pass first: .cl (OpenCL, gfx906), .cu (CUDA, sm_90),\n"
        ".ll (LLVM IR, target of the module) or .mir (machine IR, through llc).\n"
        "\n"
        "  --json       one JSON object: {\"kernels\":[...],\"average\":{...}}\n"
        "  --csv        a header line and one line per kernel\n"
        "  --osrb       compile with on-chip scalar register backup (-preempt-ctxback-osrb)\n"
        "  --check=N    compile with the routine checker, N trials (-preempt-ctxback-check=N)\n"
        "  -h, --help   this text\n"
        "\n"
        "Environment: PREEMPT_CLANG, PREEMPT_LLC, PREEMPT_PLUGIN, PREEMPT_CUDA_PATH override the compiled-in\n"
        "paths (" PREEMPT_REPORT_CLANG ", " PREEMPT_REPORT_LLC ",\n"
        PREEMPT_REPORT_PLUGIN ", " PREEMPT_REPORT_CUDA_PATH ").\n"
        "Exit status: 0 on success, 1 on an error, 2 when a routine check failed (the report is printed).\n",
        stream);
}

static const char *environment_or(const char *name, const char *fallback) {
  const char *value = getenv(name);
  return value && *value ? value : fallback;
}

typedef struct command_line {
  output_format format;
  compile_options options;
  const char **inputs; /* into argv */
  size_t input_count;
  int help;
} command_line;

static int parse_command_line(int argc, char **argv, command_line *line) {
  line->inputs = calloc((size_t)argc, sizeof *line->inputs);
  if (!line->inputs) {
    report_error(NULL, 0, 0, "out of memory");
    return -1;
  }
  int options_done = 0;
  for (int i = 1; i < argc; i++) {
    const char *argument = argv[i];
    if (options_done || argument[0] != '-' || argument[1] == '\0') {
      line->inputs[line->input_count++] = argument;
    } else if (strcmp(argument, "--") == 0) {
      options_done = 1;
    } else if (strcmp(argument, "-h") == 0 || strcmp(argument, "--help") == 0) {
      line->help = 1;
    } else if (strcmp(argument, "--json") == 0 || strcmp(argument, "--csv") == 0) {
      output_format requested = strcmp(argument, "--json") == 0 ? OUTPUT_JSON : OUTPUT_CSV;
      if (line->format != OUTPUT_TABLE && line->format != requested) {
        report_error(NULL, 0, 0, "--json and --csv exclude each other");
        return -1;
      }
      line->format = requested;
    } else if (strcmp(argument, "--osrb") == 0) {
      line->options.osrb = 1;
    } else if (starts_with(argument, "--check=")) {
      const char *trials = argument + strlen("--check=");
      uint64_t ignored;
      if (parse_unsigned(trials, strlen(trials), &ignored) != NUMBER_OK) {
        report_error(NULL, 0, 0, "--check wants an unsigned number of trials, not \"%s\"", trials);
        return -1;
      }
      line->options.check_trials = trials;
    } else {
      report_error(NULL, 0, 0, "unknown option %s (see --help)", argument);
      return -1;
    }
  }
  return 0;
}

static int print_report(output_format format, const kernel_list *kernels) {
  report_average average;
  compute_average(kernels, &average);
  int written = 0;
  if (format == OUTPUT_JSON) {
    written = print_json_report(kernels, &average);
  } else if (format == OUTPUT_CSV) {
    print_csv_report(kernels);
  } else if (print_text_report(kernels, &average) != 0) {
    report_error(NULL, 0, 0, "out of memory");
    return -1;
  }
  if (written != 0 || fflush(stdout) != 0 || ferror(stdout)) {
    report_error(NULL, 0, 0, "cannot write the report: %s", strerror(errno));
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  command_line line = {
      .format = OUTPUT_TABLE,
      .options =
          {
              .clang = environment_or("PREEMPT_CLANG", PREEMPT_REPORT_CLANG),
              .llc = environment_or("PREEMPT_LLC", PREEMPT_REPORT_LLC),
              .plugin = environment_or("PREEMPT_PLUGIN", PREEMPT_REPORT_PLUGIN),
              .cuda_path = environment_or("PREEMPT_CUDA_PATH", PREEMPT_REPORT_CUDA_PATH),
          },
  };
  if (parse_command_line(argc, argv, &line) != 0) {
    free(line.inputs);
    return EXIT_REPORT_ERROR;
  }
  if (line.help || line.input_count == 0) {
    print_usage(line.help ? stdout : stderr);
    free(line.inputs);
    return line.help ? 0 : EXIT_REPORT_ERROR;
  }

  kernel_list kernels = {0};
  int exit_status = 0;
  for (size_t i = 0; i < line.input_count && exit_status == 0; i++)
    if (load_input(line.inputs[i], &line.options, &kernels) != 0)
      exit_status = EXIT_REPORT_ERROR;
  if (exit_status == 0 && kernels.count == 0) {
    report_error(NULL, 0, 0, "no kernels in the input");
    exit_status = EXIT_REPORT_ERROR;
  }
  if (exit_status == 0 && print_report(line.format, &kernels) != 0)
    exit_status = EXIT_REPORT_ERROR;
  if (exit_status == 0) {
    size_t failed_kernels = report_check_failures(&kernels);
    if (failed_kernels) {
      report_error(NULL, 0, 0, "%zu kernel%s failed the routine checker (exit status %d)", failed_kernels,
                   failed_kernels == 1 ? "" : "s", EXIT_CHECK_FAILED);
      exit_status = EXIT_CHECK_FAILED;
    }
  }
  kernel_list_free(&kernels);
  free(line.inputs);
  return exit_status;
}
