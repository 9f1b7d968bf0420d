/* ctxback.h: CTXBack's context analysis over one basic block, as plain data (no LLVM).
 * CTXBack §III (flashback points, Alg. 1; reverting, Alg. 2; OSRB §III-D), §IV-C (CS-Defer, latency). */
#ifndef PREEMPT_CTXBACK_H
#define PREEMPT_CTXBACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What an instruction computes into results[0]. Exact semantics matter for
 * reverting (only ADD, SUB, XOR, NOT and MUL by an odd immediate invert) and
 * for the checker; everything else is OPAQUE, which the checker models with a
 * deterministic stand-in. Every result after results[0] (a carry, SCC) is
 * always OPAQUE. Widths come from the block's register_bits of results[0]. */
typedef enum preempt_ctx_operation {
  PREEMPT_CTX_OPAQUE = 0,
  PREEMPT_CTX_MOVE, /* operand 0, or the immediate when there is no operand */
  PREEMPT_CTX_ADD,  /* operand 0 + (operand 1 or immediate) */
  PREEMPT_CTX_SUB,  /* operand 0 - (operand 1 or immediate) */
  PREEMPT_CTX_XOR,  /* operand 0 ^ (operand 1 or immediate) */
  PREEMPT_CTX_NOT,  /* ~operand 0 */
  PREEMPT_CTX_MUL,  /* operand 0 * (operand 1 or immediate) */
} preempt_ctx_operation;

enum {
  /* Running it again from the same operands gives the same results: no side
   * effect; a load only inside an idempotent region. */
  PREEMPT_CTX_REEXECUTABLE = 1u << 0,
  /* The emitter can write it into a routine (it knows how to print it). */
  PREEMPT_CTX_COPYABLE = 1u << 1,
  /* Ends the idempotent region: a store, an atomic, a barrier, a call. No
   * flashback point or re-entry point lies at or before it. */
  PREEMPT_CTX_BARRIER = 1u << 2,
  /* A copy inserted by on-chip scalar register backup (OSRB), not the program's. */
  PREEMPT_CTX_BACKUP = 1u << 3,
};

/* Operands and results are register ids < block.register_count. Implicit
 * ones count (EXEC, SCC, VCC): a VALU instruction reads EXEC. */
typedef struct preempt_ctx_instruction {
  const uint16_t *results;
  size_t result_count;
  const uint16_t *operands;
  size_t operand_count;
  preempt_ctx_operation operation;
  int has_immediate;
  uint64_t immediate;
  unsigned flags;
  uint32_t opcode;  /* target opcode: seeds the checker's stand-in */
  uint32_t latency; /* estimated issue-to-result cycles (CS-Defer's cost) */
} preempt_ctx_instruction;

typedef enum preempt_ctx_register_kind {
  PREEMPT_CTX_VECTOR = 0, /* one value per lane: VGPR, AGPR; every NVPTX register */
  PREEMPT_CTX_SCALAR = 1, /* one value per wavefront: SGPR, EXEC, VCC, SCC, M0 */
} preempt_ctx_register_kind;

typedef struct preempt_ctx_register {
  uint32_t bytes;  /* context bytes it costs per warp or wavefront */
  uint8_t bits;    /* value width: 1..64 */
  uint8_t kind;    /* preempt_ctx_register_kind */
} preempt_ctx_register;

/* One basic block. live_after[j] is the set of registers live just after
 * instruction j; live_in the set before instruction 0. Sets are bitsets of
 * preempt_ctx_words(register_count) words. */
typedef struct preempt_ctx_block {
  const preempt_ctx_instruction *instructions;
  size_t count;
  const preempt_ctx_register *registers;
  size_t register_count; /* at most 65536 */
  const uint64_t *const *live_after;
  const uint64_t *live_in;
} preempt_ctx_block;

/* Cycle costs of the routines (§IV-C ranks plans by estimated preemption latency). */
typedef struct preempt_ctx_cost_model {
  uint32_t vector_save;   /* store one vector register of a warp or wavefront */
  uint32_t scalar_save;
  uint32_t vector_load;
  uint32_t scalar_load;
  uint32_t alu;           /* one reverting or re-executed ALU instruction in a routine */
} preempt_ctx_cost_model;

/* gfx9 estimates (documented in docs/ctxback.md). */
extern const preempt_ctx_cost_model preempt_ctx_default_costs;

typedef enum preempt_ctx_step_kind {
  PREEMPT_CTX_SAVE = 1,      /* preemption: context[slot] = register */
  PREEMPT_CTX_REVERT = 2,    /* undo instruction `instruction` on its results[0] */
  PREEMPT_CTX_LOAD = 3,      /* resumption: register = context[slot] */
  PREEMPT_CTX_REEXECUTE = 4, /* resumption: run instruction `instruction` again */
  PREEMPT_CTX_EXECUTE = 5,   /* CS-Defer, preemption: keep running the program's instruction */
} preempt_ctx_step_kind;

typedef struct preempt_ctx_step {
  uint8_t kind;          /* preempt_ctx_step_kind */
  uint16_t reg;          /* SAVE, LOAD: the register */
  uint32_t instruction;  /* REVERT, REEXECUTE, EXECUTE */
  uint32_t slot;         /* SAVE, LOAD: context slot */
} preempt_ctx_step;

typedef enum preempt_ctx_technique {
  PREEMPT_CTX_LIVE = 0,     /* save every live register at `current` */
  PREEMPT_CTX_FLASHBACK = 1,/* CTXBack: flashback point, re-execution, reverting */
  PREEMPT_CTX_CS_DEFER = 2, /* run on to a later instruction with a smaller context */
} preempt_ctx_technique;

/* How to preempt just before instruction `current` and resume. The
 * preemption routine runs `preempt`, the resumption routine `resume`, then
 * the program continues at instruction `resume_at`. Storage is owned by the
 * plan (preempt_ctx_plan_free). */
typedef struct preempt_ctx_plan {
  preempt_ctx_technique technique;
  size_t current;
  size_t flashback;     /* earliest instruction the resumption rebuilds from */
  size_t resume_at;
  preempt_ctx_step *preempt;
  size_t preempt_count;
  preempt_ctx_step *resume;
  size_t resume_count;
  uint32_t slot_count;
  uint64_t context_bytes;   /* bytes saved to memory */
  uint64_t preempt_cycles;  /* estimated preemption latency */
  uint64_t resume_cycles;   /* estimated resumption time: the routine and the program's code run again */
  size_t revert_count;
  size_t reexecute_count;
} preempt_ctx_plan;

size_t preempt_ctx_words(size_t register_count);

/* Checks the block's shape (ids in range, live sets present). 0 or -1. */
int preempt_ctx_block_validate(const preempt_ctx_block *block);

/* Bytes of the registers live just before `index` (LIVE's context). */
uint64_t preempt_ctx_live_bytes(const preempt_ctx_block *block, size_t index);

/* LIVE: save every register live before `current`, resume there. */
int preempt_ctx_plan_live(const preempt_ctx_block *block, size_t current, const preempt_ctx_cost_model *costs,
                          preempt_ctx_plan *plan);

/* CTXBack (§III-B/C/E): the re-entry point in [current - window, current]
 * (never at or before a barrier) and the saved values with the smallest
 * context; ties go to the smaller preemption latency, then the shorter
 * resumption, the shorter routine, the earliest re-entry point.
 * Every candidate is proven by preempt_ctx_verify_plan before it is kept, so
 * the result is never worse than LIVE. */
int preempt_ctx_plan_flashback(const preempt_ctx_block *block, size_t current, size_t window,
                               const preempt_ctx_cost_model *costs, preempt_ctx_plan *plan);

/* CS-Defer (§II-B [4]): keep executing to the later instruction (within the
 * block, never past a barrier or an instruction that is not COPYABLE: the
 * preemption routine runs them) with the smallest estimated preemption latency:
 * the cycles of the instructions run plus saving what is live there. */
int preempt_ctx_plan_cs_defer(const preempt_ctx_block *block, size_t current, const preempt_ctx_cost_model *costs,
                              preempt_ctx_plan *plan);

/* CTXBack+CS-Defer (§IV-C): whichever of the two has the smaller estimated
 * preemption latency (CTXBack on ties). */
int preempt_ctx_plan_combined(const preempt_ctx_block *block, size_t current, size_t window,
                              const preempt_ctx_cost_model *costs, preempt_ctx_plan *plan);

void preempt_ctx_plan_free(preempt_ctx_plan *plan);

/* Symbolic proof: tracks which value every register holds through the block,
 * the preemption routine, a wipe and the resumption routine, and checks that
 * each register live before `current` holds its value again when the program
 * re-reaches `current`. 0 when proven, -1 when not. */
int preempt_ctx_verify_plan(const preempt_ctx_block *block, const preempt_ctx_plan *plan);

/* Concrete check (the checker): random initial registers, real
 * semantics for MOVE/ADD/SUB/XOR/NOT/MUL and a deterministic stand-in for the
 * rest; runs the block to `current`, the preemption routine, wipes every
 * register with fresh random values, runs the resumption routine and the
 * program from resume_at to `current`, and compares every live register.
 * Returns 0 when all match for `trials` seeds, -1 otherwise (first mismatching
 * register in *bad_register when not NULL). */
int preempt_ctx_check_plan(const preempt_ctx_block *block, const preempt_ctx_plan *plan, uint64_t seed,
                           unsigned trials, uint16_t *bad_register);

/* OSRB (§III-D): where to copy scalar registers into free registers so more
 * instructions become flashback points. A backup copies `source` into
 * `backup` just before instruction `before` (the instruction that overwrites
 * `source`). */
typedef struct preempt_ctx_backup {
  size_t before;
  uint16_t source;
  uint16_t backup;
} preempt_ctx_backup;

/* Chooses backups greedily, keeping one only when it lowers the block's
 * summed CTXBack context; `free_registers` are scalar registers never used
 * in the function (alignment leftovers), each used at most once. Writes up to
 * `capacity` backups sorted by `before`; *count gets how many. */
int preempt_ctx_choose_backups(const preempt_ctx_block *block, size_t window, const preempt_ctx_cost_model *costs,
                               const uint16_t *free_registers, size_t free_count, preempt_ctx_backup *backups,
                               size_t capacity, size_t *count);

/* The block with the backups inserted as MOVE instructions flagged
 * PREEMPT_CTX_BACKUP. Liveness is unchanged: the program never reads a
 * backup; a plan may save it. `index_map[j]` gets the new index of original
 * instruction j. The new block shares `registers` and `live_in` with the
 * old one. Free with preempt_ctx_block_free. */
int preempt_ctx_insert_backups(const preempt_ctx_block *block, const preempt_ctx_backup *backups, size_t count,
                               preempt_ctx_block *with_backups, size_t *index_map);
void preempt_ctx_block_free(preempt_ctx_block *block);

/* Per-kernel sums over every preemption point (each instruction of each
 * block): the context bytes of each technique, for preempt-report's Fig. 7. */
typedef struct preempt_ctx_totals {
  uint64_t points;          /* instructions analysed */
  uint64_t live;            /* LIVE */
  uint64_t ckpt;            /* CKPT: the block's smallest live context (the minimum a checkpoint could save) */
  uint64_t cs_defer;        /* CS-Defer */
  uint64_t flashback;       /* CTXBack */
  uint64_t combined;        /* CTXBack+CS-Defer */
  uint64_t flashback_cycles, cs_defer_cycles, combined_cycles; /* summed estimated preemption latency */
  uint64_t reverts, reexecutions; /* in the combined plans */
  uint64_t checked;         /* plans run through preempt_ctx_check_plan */
  uint64_t check_failures;  /* of those, how many failed (must be 0) */
} preempt_ctx_totals;

/* Plans every instruction of the block with LIVE, CS-Defer, CTXBack and the
 * combination, adds them to *totals, and runs the concrete checker on each
 * plan `check_trials` times (0: no check). When `combined` is not NULL it
 * gets block->count plans (the routines to emit), freed by the caller with
 * preempt_ctx_plan_free. */
int preempt_ctx_analyze_block(const preempt_ctx_block *block, size_t window, const preempt_ctx_cost_model *costs,
                              unsigned check_trials, preempt_ctx_totals *totals, preempt_ctx_plan *combined);

#ifdef __cplusplus
}
#endif
#endif
