/* inline_asm.c: a PTX inline-assembly string split into statements, each classified as pure, memory or unsafe.
 * Issue 39 item 4; docs/persistent-threads.md "Refusals" (FLEP §4.1's conversion, the drain form's gate, CTXBack §III-B). */
#include "preempt/inline_asm.h"

#include <string.h>

/* ---- characters ---- */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }

/* Length of an identifier at `at` (PTX: letters, digits, '_', '$'; a '$' is
 * "$$" in IR spelling, a lone '$' before a letter in source spelling), 0 if none.
 * "$0" and "${0}" are operands, not identifiers. */
static size_t ident_length(const char *text, size_t length, size_t at) {
  size_t end = at;
  while (end < length) {
    char c = text[end];
    if (is_word(c)) {
      end++;
    } else if (c == '$' && end + 1 < length && text[end + 1] == '$') {
      end += 2;
    } else if (c == '$' && end + 1 < length && (is_alpha(text[end + 1]) || text[end + 1] == '_')) {
      end++;
    } else {
      break;
    }
  }
  return end - at;
}

/* Past a comment starting at `at`, or `at` if none starts there. */
static size_t skip_comment(const char *text, size_t length, size_t at) {
  if (at + 1 >= length || text[at] != '/')
    return at;
  if (text[at + 1] == '/') {
    while (at < length && text[at] != '\n')
      at++;
    return at;
  }
  if (text[at + 1] == '*') {
    at += 2;
    while (at + 1 < length && !(text[at] == '*' && text[at + 1] == '/'))
      at++;
    return at + 1 < length ? at + 2 : length;
  }
  return at;
}

static size_t skip_blank(const char *text, size_t length, size_t at) {
  for (;;) {
    while (at < length && is_space(text[at]))
      at++;
    size_t past = skip_comment(text, length, at);
    if (past == at)
      return at;
    at = past;
  }
}

static int span_is(const char *text, size_t offset, size_t length, const char *word) {
  size_t n = strlen(word);
  return length == n && memcmp(text + offset, word, n) == 0;
}

static int starts_with(const char *text, size_t offset, size_t length, const char *prefix) {
  size_t n = strlen(prefix);
  return length >= n && memcmp(text + offset, prefix, n) == 0;
}

/* ---- statements ---- */

typedef enum statement_kind { STATEMENT_END, STATEMENT_PLAIN, STATEMENT_LABEL, STATEMENT_BROKEN } statement_kind;

typedef struct splitter {
  const char *text;
  size_t length, at;
  int depth;  /* scope braces open */
  int broken; /* reported a brace closed twice, or left open */
} splitter;

/* The next statement: [*start, *end) without its ';'. A label ("name:")
 * is a statement of its own, its span the name. */
static statement_kind next_statement(splitter *s, size_t *start, size_t *end) {
  const char *text = s->text;
  size_t length = s->length;
  for (;;) {
    s->at = skip_blank(text, length, s->at);
    if (s->at >= length) {
      if (s->depth != 0 && !s->broken) {
        s->broken = 1;
        *start = *end = length;
        return STATEMENT_BROKEN;
      }
      return STATEMENT_END;
    }
    char c = text[s->at];
    if (c == '{') {
      s->depth++;
      s->at++;
    } else if (c == '}') {
      if (s->depth == 0) {
        *start = s->at;
        *end = ++s->at;
        s->broken = 1;
        return STATEMENT_BROKEN;
      }
      s->depth--;
      s->at++;
    } else if (c == ';') {
      s->at++;
    } else {
      break;
    }
  }
  *start = s->at;
  size_t word = ident_length(text, length, s->at);
  if (word > 0) {
    size_t after = skip_blank(text, length, s->at + word);
    if (after < length && text[after] == ':' && !(after + 1 < length && text[after + 1] == ':')) {
      *end = s->at + word;
      s->at = after + 1;
      return STATEMENT_LABEL;
    }
  }
  int vector = 0; /* "{a, b}" operands */
  while (s->at < length) {
    size_t past = skip_comment(text, length, s->at);
    if (past != s->at) {
      s->at = past;
      continue;
    }
    char c = text[s->at];
    if (c == ';')
      break;
    if (c == '{') {
      vector++;
    } else if (c == '}') {
      if (vector == 0)
        break; /* closes the scope: the statement had no ';' */
      vector--;
    } else if (c == '$' && s->at + 1 < length && text[s->at + 1] == '{') {
      while (s->at + 1 < length && text[s->at] != '}') /* ${0:x}: an operand, not a vector */
        s->at++;
    }
    s->at++;
  }
  *end = s->at;
  while (*end > *start && is_space(text[*end - 1]))
    (*end)--;
  if (s->at < length && text[s->at] == ';')
    s->at++;
  return STATEMENT_PLAIN;
}

/* ---- declared registers and labels ---- */

#define MAX_NAMES 128

typedef struct name_table {
  uint32_t offset[MAX_NAMES], length[MAX_NAMES];
  uint8_t ranged[MAX_NAMES]; /* "%r<4>": the names %r0..%r3 */
  size_t count;
  int overflow;
} name_table;

static void add_name(name_table *table, size_t offset, size_t length, int ranged) {
  if (table->count == MAX_NAMES) {
    table->overflow = 1;
    return;
  }
  table->offset[table->count] = (uint32_t)offset;
  table->length[table->count] = (uint32_t)length;
  table->ranged[table->count] = (uint8_t)ranged;
  table->count++;
}

/* Whether the name text[offset, +length) is in the table (spellings compared
 * with "$$" and "$" alike). */
static int same_name(const char *text, size_t a, size_t a_length, size_t b, size_t b_length, int b_ranged) {
  size_t i = 0, j = 0;
  while (i < a_length && j < b_length) {
    char x = text[a + i], y = text[b + j];
    if (x != y)
      return 0;
    i += (x == '$' && i + 1 < a_length && text[a + i + 1] == '$') ? 2 : 1;
    j += (y == '$' && j + 1 < b_length && text[b + j + 1] == '$') ? 2 : 1;
  }
  if (j != b_length)
    return 0;
  if (i == a_length)
    return !b_ranged;
  if (!b_ranged)
    return 0;
  for (; i < a_length; i++)
    if (!is_digit(text[a + i]))
      return 0;
  return 1;
}

static int has_name(const name_table *table, const char *text, size_t offset, size_t length) {
  for (size_t k = 0; k < table->count; k++)
    if (same_name(text, offset, length, table->offset[k], table->length[k], table->ranged[k]))
      return 1;
  return 0;
}

/* Leading '%' of a register name: one in IR spelling, "%%" in source spelling. */
static size_t percent_length(const char *text, size_t length, size_t at) {
  if (at < length && text[at] == '%')
    return (at + 1 < length && text[at + 1] == '%') ? 2 : 1;
  return 0;
}

/* ".reg .b32 a, %r<4>, b": records the %-named registers (the others cannot be
 * taken for special registers). */
static void declare_registers(const char *text, size_t start, size_t end, name_table *registers) {
  size_t at = start;
  while (at < end) {
    at = skip_blank(text, end, at);
    if (at >= end)
      break;
    if (text[at] == '.') { /* .reg, .b32, .v4: the directive and its types */
      at++;
      at += ident_length(text, end, at);
      continue;
    }
    if (text[at] == ',') {
      at++;
      continue;
    }
    size_t percents = percent_length(text, end, at);
    size_t name = at + percents;
    size_t name_length = ident_length(text, end, name);
    if (name_length == 0) {
      at++;
      continue;
    }
    at = name + name_length;
    int ranged = at < end && text[at] == '<';
    while (at < end && text[at] != ',')
      at++;
    if (percents > 0)
      add_name(registers, name, name_length, ranged);
  }
}

/* ---- special registers ---- */

/* What reading %name does; name is its base, up to any ".x". */
static preempt_asm_hazard special_register(const char *name, size_t length, const char **why) {
  static const char *const harmless[] = {"tid",         "ntid",        "laneid",     "lanemask_eq",
                                         "lanemask_le", "lanemask_lt", "lanemask_ge", "lanemask_gt"};
  static const char *const grid[] = {"ctaid",           "nctaid",           "gridid",       "clusterid",
                                     "nclusterid",      "cluster_ctaid",    "cluster_nctaid", "cluster_ctarank",
                                     "cluster_nctarank", "is_explicit_cluster"};
  static const char *const clocks[] = {"clock",       "clock_hi",       "clock64",
                                       "globaltimer", "globaltimer_lo", "globaltimer_hi"};
  static const char *const place[] = {"smid", "nsmid", "warpid", "nwarpid"};
  static const char *const layout[] = {"reserved_smem_offset_", "dynamic_smem_size", "total_smem_size",
                                       "aggr_smem_size"}; /* prefixes */
  for (size_t k = 0; k < sizeof harmless / sizeof *harmless; k++)
    if (span_is(name, 0, length, harmless[k]))
      return PREEMPT_ASM_NO_HAZARD;
  for (size_t k = 0; k < sizeof grid / sizeof *grid; k++)
    if (span_is(name, 0, length, grid[k])) {
      *why = "reads a grid register";
      return PREEMPT_ASM_GRID;
    }
  for (size_t k = 0; k < sizeof clocks / sizeof *clocks; k++)
    if (span_is(name, 0, length, clocks[k])) {
      *why = "reads a clock";
      return PREEMPT_ASM_CLOCK;
    }
  if (length >= 3 && name[0] == 'p' && name[1] == 'm' && is_digit(name[2])) {
    *why = "reads a clock";
    return PREEMPT_ASM_CLOCK;
  }
  if (starts_with(name, 0, length, "envreg")) {
    *why = "reads an environment register";
    return PREEMPT_ASM_ENVREG;
  }
  if (starts_with(name, 0, length, "cluster")) {
    *why = "uses thread-block clusters";
    return PREEMPT_ASM_GRID;
  }
  for (size_t k = 0; k < sizeof place / sizeof *place; k++)
    if (span_is(name, 0, length, place[k])) {
      *why = "reads where the thread runs";
      return PREEMPT_ASM_PLACE;
    }
  for (size_t k = 0; k < sizeof layout / sizeof *layout; k++)
    if (starts_with(name, 0, length, layout[k])) {
      *why = "reads the shared-memory layout";
      return PREEMPT_ASM_LAYOUT;
    }
  *why = "reads a special register not known harmless";
  return PREEMPT_ASM_REGISTER;
}

/* The worst special register among the operands text[at, end). */
static preempt_asm_hazard scan_operands(const char *text, size_t at, size_t end, const name_table *registers,
                                        const char **why) {
  preempt_asm_hazard worst = PREEMPT_ASM_NO_HAZARD;
  while (at < end) {
    size_t past = skip_comment(text, end, at);
    if (past != at) {
      at = past;
      continue;
    }
    char c = text[at];
    if (c == '$') {
      if (at + 1 < end && text[at + 1] == '{') {
        while (at < end && text[at] != '}')
          at++;
        at++;
      } else if (at + 1 < end && text[at + 1] == '$') {
        at += 2 + ident_length(text, end, at + 2);
      } else {
        at++;
      }
      continue;
    }
    if (c == '%') {
      size_t name = at + percent_length(text, end, at);
      if (name < end && is_digit(text[name])) { /* %0: an operand */
        at = name + 1;
        continue;
      }
      size_t name_length = ident_length(text, end, name);
      at = name + (name_length ? name_length : 1);
      if (name_length == 0 || has_name(registers, text, name, name_length))
        continue;
      const char *register_why = NULL;
      preempt_asm_hazard hazard = special_register(text + name, name_length, &register_why);
      /* The first of the most serious: one the conversion refuses beats one it keeps. */
      if (hazard != PREEMPT_ASM_NO_HAZARD &&
          (worst == PREEMPT_ASM_NO_HAZARD ||
           ((PREEMPT_ASM_CONVERSION_HAZARDS >> hazard) & 1u && !((PREEMPT_ASM_CONVERSION_HAZARDS >> worst) & 1u)))) {
        worst = hazard;
        *why = register_why;
      }
      continue;
    }
    if (is_word(c)) { /* a register name, a label, an immediate: past it whole */
      at += ident_length(text, end, at);
      continue;
    }
    at++;
  }
  return worst;
}

/* ---- opcodes ---- */

/* Whether the opcode text[offset, +length) has `part` as one of its parts,
 * split on '.' and "::": "ld.shared::cta.u32" has "ld", "shared", "cta", "u32". */
static int has_part(const char *text, size_t offset, size_t length, const char *part) {
  size_t n = strlen(part), at = offset, end = offset + length;
  while (at < end) {
    size_t stop = at;
    while (stop < end && text[stop] != '.' && text[stop] != ':')
      stop++;
    if (stop - at == n && memcmp(text + at, part, n) == 0)
      return 1;
    at = stop;
    while (at < end && (text[at] == '.' || text[at] == ':'))
      at++;
  }
  return 0;
}

static int root_in(const char *text, size_t offset, size_t root_length, const char *const *roots, size_t count) {
  for (size_t k = 0; k < count; k++)
    if (span_is(text, offset, root_length, roots[k]))
      return 1;
  return 0;
}

/* Register work: arithmetic, conversion, moves, comparison, logic. */
static const char *const pure_roots[] = {
    "abs",      "add",      "addc",     "and",    "bfe",     "bfi",    "bfind",  "bmsk",    "brev",    "clz",
    "cnot",     "copysign", "cos",      "cvt",    "cvta",    "div",    "dp2a",   "dp4a",    "ex2",     "fma",
    "fns",      "isspacep", "lg2",      "lop3",   "mad",     "mad24",  "madc",   "max",     "min",     "mov",
    "mul",      "mul24",    "neg",      "not",    "or",      "popc",   "prmt",   "rcp",     "rem",     "rsqrt",
    "sad",      "selp",     "set",      "setp",   "shf",     "shl",    "shr",    "sin",     "slct",    "sqrt",
    "sub",      "subc",     "szext",    "tanh",   "testp",   "xor",    "createpolicy",      "vabsdiff", "vadd",
    "vmad",     "vmax",     "vmin",     "vset",   "vshl",    "vshr",   "vsub",   "vabsdiff2", "vabsdiff4",
    "vadd2",    "vadd4",    "vavrg2",   "vavrg4", "vmax2",   "vmax4",  "vmin2",  "vmin4",   "vset2",   "vset4",
    "vsub2",    "vsub4"};
/* Warp-level register work: the lanes named run it together. */
static const char *const lane_roots[] = {"shfl", "vote", "match", "redux", "activemask", "elect", "mma", "movmatrix"};
static const char *const async_roots[] = {"cp",      "wgmma",      "tcgen05", "setmaxnreg", "griddepcontrol",
                                          "tensormap", "multimem", "applypriority", "discard"};

static void set_unsafe(preempt_asm_instruction *I, preempt_asm_hazard hazard, const char *why) {
  I->asm_class = PREEMPT_ASM_UNSAFE;
  I->hazard = (uint8_t)hazard;
  I->why = why;
}

static void set_memory(preempt_asm_instruction *I, uint32_t flags, const char *why) {
  I->asm_class = PREEMPT_ASM_MEMORY;
  I->flags |= flags;
  I->why = why;
}

/* The state space of a memory access: its flag. */
static uint32_t space_flags(const char *text, size_t offset, size_t length) {
  if (has_part(text, offset, length, "shared"))
    return PREEMPT_ASM_SHARED;
  if (has_part(text, offset, length, "global") || has_part(text, offset, length, "local") ||
      has_part(text, offset, length, "const") || has_part(text, offset, length, "param"))
    return 0;
  return PREEMPT_ASM_GENERIC;
}

/* A statement whose opcode the allow-list does not know, named by the
 * substrings that once refused every inline asm of a kernel (kept for whatever
 * they still catch). */
static void classify_unknown(const char *text, size_t offset, size_t length, preempt_asm_instruction *I) {
  struct token { const char *text; preempt_asm_hazard hazard; const char *why; };
  static const struct token tokens[] = {
      {"ctaid", PREEMPT_ASM_GRID, "reads a grid register"},
      {"cluster", PREEMPT_ASM_GRID, "uses thread-block clusters"},
      {"envreg", PREEMPT_ASM_ENVREG, "reads an environment register"},
      {"clock", PREEMPT_ASM_CLOCK, "reads a clock"},
      {"globaltimer", PREEMPT_ASM_CLOCK, "reads a clock"},
      {"barrier", PREEMPT_ASM_BARRIER, "meets at a barrier"},
      {"bar.", PREEMPT_ASM_BARRIER, "meets at a barrier"},
      {"exit", PREEMPT_ASM_EXIT, "ends the thread"}};
  for (size_t k = 0; k < sizeof tokens / sizeof *tokens; k++) {
    size_t n = strlen(tokens[k].text);
    for (size_t at = offset; at + n <= offset + length; at++)
      if (memcmp(text + at, tokens[k].text, n) == 0) {
        set_unsafe(I, tokens[k].hazard, tokens[k].why);
        return;
      }
  }
  set_unsafe(I, PREEMPT_ASM_UNKNOWN, "has an instruction the pass does not know");
}

/* Classifies the opcode text[op, +op_length) with root length `root`. */
static void classify_opcode(const char *text, size_t op, size_t op_length, size_t root, const name_table *labels,
                            size_t operands, size_t end, preempt_asm_instruction *I) {
#define ROOT_IS(word) span_is(text, op, root, word)
#define HAS(part) has_part(text, op, op_length, part)
  if (root_in(text, op, root, pure_roots, sizeof pure_roots / sizeof *pure_roots)) {
    I->why = "computes in registers";
  } else if (root_in(text, op, root, lane_roots, sizeof lane_roots / sizeof *lane_roots) ||
             (ROOT_IS("bar") && HAS("warp")) || (ROOT_IS("wmma") && HAS("mma"))) {
    I->flags |= PREEMPT_ASM_LANES;
    I->why = "exchanges registers across the warp";
  } else if (ROOT_IS("ld") || ROOT_IS("ldu")) {
    uint32_t flags = PREEMPT_ASM_LOAD | space_flags(text, op, op_length);
    const char *why = "loads memory";
    if (HAS("volatile") || HAS("mmio") || HAS("cv")) {
      flags |= PREEMPT_ASM_VOLATILE_LOAD;
      why = "reads volatile memory";
    } else if (HAS("relaxed") || HAS("acquire") || HAS("sc") || HAS("acq_rel")) {
      flags |= PREEMPT_ASM_STRONG_LOAD;
      why = "makes an atomic load (relaxed or acquire)";
    }
    set_memory(I, flags, why);
  } else if (ROOT_IS("st")) {
    set_memory(I, PREEMPT_ASM_STORE | space_flags(text, op, op_length), "stores to memory");
  } else if (ROOT_IS("atom")) {
    set_memory(I, PREEMPT_ASM_ATOMIC | space_flags(text, op, op_length), "makes an atomic whose result comes back");
  } else if (ROOT_IS("red")) {
    set_memory(I, PREEMPT_ASM_REDUCTION | space_flags(text, op, op_length), "makes an atomic reduction");
  } else if (ROOT_IS("fence") || ROOT_IS("membar")) {
    set_memory(I, PREEMPT_ASM_FENCE, "fences memory");
  } else if (ROOT_IS("prefetch") || ROOT_IS("prefetchu")) {
    set_memory(I, PREEMPT_ASM_PREFETCH, "prefetches memory");
  } else if (ROOT_IS("tex") || ROOT_IS("tld4") || ROOT_IS("txq") || ROOT_IS("suq") || ROOT_IS("suld")) {
    set_memory(I, PREEMPT_ASM_LOAD, "reads a texture or surface");
  } else if (ROOT_IS("sust")) {
    set_memory(I, PREEMPT_ASM_STORE, "writes a surface");
  } else if (ROOT_IS("sured")) {
    set_memory(I, PREEMPT_ASM_REDUCTION, "makes an atomic reduction");
  } else if (ROOT_IS("ldmatrix") || (ROOT_IS("wmma") && HAS("load"))) {
    set_memory(I, PREEMPT_ASM_LOAD | PREEMPT_ASM_LANES | space_flags(text, op, op_length), "loads memory");
  } else if (ROOT_IS("stmatrix") || (ROOT_IS("wmma") && HAS("store"))) {
    set_memory(I, PREEMPT_ASM_STORE | PREEMPT_ASM_LANES | space_flags(text, op, op_length), "stores to memory");
  } else if (ROOT_IS("bar") || ROOT_IS("barrier") || ROOT_IS("mbarrier")) {
    set_unsafe(I, PREEMPT_ASM_BARRIER, "meets at a barrier");
  } else if (ROOT_IS("exit") || ROOT_IS("trap") || ROOT_IS("brkpt")) {
    set_unsafe(I, PREEMPT_ASM_EXIT, "ends the thread");
  } else if (ROOT_IS("ret") || ROOT_IS("call") || ROOT_IS("brx")) {
    set_unsafe(I, PREEMPT_ASM_LEAVES, "leaves the assembly");
  } else if (ROOT_IS("bra")) {
    size_t target = skip_blank(text, end, operands);
    size_t target_length = ident_length(text, end, target);
    if (target_length > 0 && !labels->overflow && has_name(labels, text, target, target_length))
      set_unsafe(I, PREEMPT_ASM_BRANCH, "branches");
    else
      set_unsafe(I, PREEMPT_ASM_LEAVES, "branches out of the assembly");
  } else if (ROOT_IS("mapa") || ROOT_IS("getctarank") || ROOT_IS("clusterlaunchcontrol")) {
    set_unsafe(I, PREEMPT_ASM_GRID, "uses thread-block clusters");
  } else if (ROOT_IS("nanosleep")) {
    set_unsafe(I, PREEMPT_ASM_WAIT, "sleeps (nanosleep)");
  } else if (root_in(text, op, root, async_roots, sizeof async_roots / sizeof *async_roots)) {
    set_unsafe(I, PREEMPT_ASM_ASYNC, "starts asynchronous or warpgroup work");
  } else {
    classify_unknown(text, I->offset, I->length, I);
    return;
  }
  /* Whatever the root: asynchronous forms, clusters. */
  if (I->asm_class != PREEMPT_ASM_UNSAFE && HAS("async"))
    set_unsafe(I, PREEMPT_ASM_ASYNC, "starts asynchronous or warpgroup work");
  else if (I->hazard != PREEMPT_ASM_BARRIER && I->hazard != PREEMPT_ASM_EXIT && HAS("cluster"))
    set_unsafe(I, PREEMPT_ASM_GRID, "uses thread-block clusters");
#undef ROOT_IS
#undef HAS
}

/* Classifies the statement text[start, end). */
static void classify_statement(const char *text, size_t start, size_t end, name_table *registers,
                               const name_table *labels, preempt_asm_instruction *I) {
  memset(I, 0, sizeof *I);
  I->offset = (uint32_t)start;
  I->length = (uint32_t)(end - start);
  I->asm_class = PREEMPT_ASM_PURE;
  size_t at = start;
  if (at < end && text[at] == '@') { /* a guard: @p, @!p, @%p1, @$1 */
    I->predicated = 1;
    at++;
    while (at < end && !is_space(text[at]))
      at++;
    at = skip_blank(text, end, at);
  }
  size_t op = at;
  if (at < end && text[at] == '.')
    at++;
  while (at < end && (is_word(text[at]) || text[at] == '.' || text[at] == ':'))
    at++;
  size_t op_length = at - op, root = 0;
  while (root < op_length && text[op + root] != '.' && text[op + root] != ':')
    root++;
  if (op_length > 0 && text[op] == '.') { /* a directive: its name is its root */
    root = 1 + (size_t)ident_length(text, op + op_length, op + 1);
  }
  I->opcode_offset = (uint32_t)op;
  I->opcode_length = (uint32_t)op_length;
  I->root_length = (uint32_t)root;
  if (op_length == 0 || !(is_alpha(text[op]) || text[op] == '.') || (at < end && !is_space(text[at]))) {
    set_unsafe(I, PREEMPT_ASM_UNKNOWN, "has text the pass cannot parse");
    return;
  }
  if (text[op] == '.') {
    if (span_is(text, op, root, ".reg")) {
      declare_registers(text, op, end, registers);
      I->why = "declares registers";
    } else {
      set_unsafe(I, PREEMPT_ASM_UNKNOWN, "has a directive the pass does not know");
    }
    return;
  }
  const char *register_why = NULL;
  preempt_asm_hazard from_register = scan_operands(text, at, end, registers, &register_why);
  classify_opcode(text, op, op_length, root, labels, at, end, I);
  /* A special register decides over the opcode, unless the opcode's own hazard is one the conversion refuses. */
  if (from_register != PREEMPT_ASM_NO_HAZARD &&
      !(I->asm_class == PREEMPT_ASM_UNSAFE && ((PREEMPT_ASM_CONVERSION_HAZARDS >> I->hazard) & 1u)))
    set_unsafe(I, from_register, register_why);
}

/* ---- the walk ---- */

typedef void (*visit_fn)(void *context, const preempt_asm_instruction *instruction);

static void walk(const char *text, size_t length, visit_fn visit, void *context) {
  if (!text)
    length = 0;
  /* First the labels: a branch may go forward. */
  name_table labels;
  labels.count = 0;
  labels.overflow = 0;
  splitter s = {text, length, 0, 0, 0};
  size_t start, end;
  statement_kind kind;
  while ((kind = next_statement(&s, &start, &end)) != STATEMENT_END)
    if (kind == STATEMENT_LABEL)
      add_name(&labels, start, end - start, 0);
  name_table registers;
  registers.count = 0;
  registers.overflow = 0;
  splitter t = {text, length, 0, 0, 0};
  while ((kind = next_statement(&t, &start, &end)) != STATEMENT_END) {
    preempt_asm_instruction I;
    if (kind == STATEMENT_PLAIN) {
      classify_statement(text, start, end, &registers, &labels, &I);
    } else {
      memset(&I, 0, sizeof I);
      I.offset = I.opcode_offset = (uint32_t)start;
      I.length = I.opcode_length = I.root_length = (uint32_t)(end - start);
      if (kind == STATEMENT_LABEL) {
        I.is_label = 1;
        set_unsafe(&I, PREEMPT_ASM_BRANCH, "branches");
      } else {
        set_unsafe(&I, PREEMPT_ASM_UNKNOWN, "has unbalanced braces");
      }
    }
    visit(context, &I);
  }
}

typedef struct collect_context {
  preempt_asm_instruction *out;
  size_t capacity, count;
} collect_context;

static void collect(void *context, const preempt_asm_instruction *instruction) {
  collect_context *c = context;
  if (c->count < c->capacity)
    c->out[c->count] = *instruction;
  c->count++;
}

size_t preempt_asm_parse(const char *text, size_t length, preempt_asm_instruction *out, size_t capacity) {
  collect_context c = {out, out ? capacity : 0, 0};
  walk(text, length, collect, &c);
  return c.count;
}

/* ---- the whole call ---- */

static void find(preempt_asm_finding *finding, const preempt_asm_instruction *I) {
  if (finding->why)
    return;
  finding->offset = I->offset;
  finding->length = I->length;
  finding->why = I->why;
  finding->hazard = I->hazard;
}

static void summarize(void *context, const preempt_asm_instruction *I) {
  preempt_asm_summary *summary = context;
  summary->instruction_count++;
  summary->flags |= I->flags;
  if (I->asm_class > summary->asm_class)
    summary->asm_class = (preempt_asm_class)I->asm_class;
  if (I->asm_class != PREEMPT_ASM_PURE)
    find(&summary->not_pure, I);
  if (I->asm_class != PREEMPT_ASM_PURE && !(I->asm_class == PREEMPT_ASM_MEMORY && I->flags == PREEMPT_ASM_PREFETCH))
    find(&summary->intask, I);
  if (I->asm_class == PREEMPT_ASM_UNSAFE) {
    summary->hazards |= 1u << I->hazard;
    find(&summary->unsafe, I);
    if ((PREEMPT_ASM_CONVERSION_HAZARDS >> I->hazard) & 1u)
      find(&summary->conversion, I);
  }
  int may_do_anything =
      I->asm_class == PREEMPT_ASM_UNSAFE && !((PREEMPT_ASM_READ_ONLY_HAZARDS >> I->hazard) & 1u);
  if (may_do_anything || (I->flags & (PREEMPT_ASM_VOLATILE_LOAD | PREEMPT_ASM_STRONG_LOAD | PREEMPT_ASM_ATOMIC)))
    find(&summary->drain, I);
  if (may_do_anything || (I->flags & (PREEMPT_ASM_STORE | PREEMPT_ASM_ATOMIC | PREEMPT_ASM_REDUCTION)))
    find(&summary->writes, I);
}

/* The IR facts of a constraint string: "~{memory}", and indirect operands ("=*m", "*m"). */
static uint32_t constraint_flags(const char *constraints) {
  uint32_t flags = 0;
  if (!constraints)
    return 0;
  const char *at = constraints;
  while (*at) {
    const char *stop = strchr(at, ',');
    size_t length = stop ? (size_t)(stop - at) : strlen(at);
    if (span_is(at, 0, length, "~{memory}"))
      flags |= PREEMPT_ASM_CLOBBER;
    else if (length > 0 && at[0] != '~' && memchr(at, '*', length))
      flags |= PREEMPT_ASM_INDIRECT;
    at += length;
    if (*at == ',')
      at++;
  }
  return flags;
}

int preempt_asm_classify(const char *text, size_t length, const char *constraints, int side_effects,
                         preempt_asm_summary *summary) {
  memset(summary, 0, sizeof *summary);
  summary->asm_class = PREEMPT_ASM_PURE;
  walk(text, length, summarize, summary);
  uint32_t facts = constraint_flags(constraints);
  if (side_effects)
    summary->flags |= PREEMPT_ASM_SIDE_EFFECTS;
  if (facts) {
    summary->flags |= facts;
    if (summary->asm_class == PREEMPT_ASM_PURE)
      summary->asm_class = PREEMPT_ASM_MEMORY;
    preempt_asm_instruction fact;
    memset(&fact, 0, sizeof fact);
    fact.why = (facts & PREEMPT_ASM_INDIRECT) ? "has a memory operand" : "clobbers memory";
    find(&summary->not_pure, &fact);
  }
  return 0;
}

int preempt_asm_is_recomputable(const preempt_asm_summary *summary) {
  return summary->asm_class == PREEMPT_ASM_PURE &&
         !(summary->flags & (PREEMPT_ASM_LANES | PREEMPT_ASM_SIDE_EFFECTS));
}
