/* inline_asm.h: what a PTX inline-assembly string does, instruction by instruction: register work, memory, or unsafe.
 * Issue 39 item 4; docs/persistent-threads.md "Refusals" (FLEP §4.1's conversion, the drain form's gate, CTXBack §III-B). */
#ifndef PREEMPT_INLINE_ASM_H
#define PREEMPT_INLINE_ASM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What one instruction, or a whole asm string, does; a string is its worst instruction. */
typedef enum preempt_asm_class {
  PREEMPT_ASM_PURE = 0,   /* register arithmetic, conversion, moves, logic, warp-level exchange (shfl.sync,
                             vote, ...), reads of %tid, %ntid, %laneid, %lanemask_*: a function of its operands
                             (and of its lane's warp, for the warp-level ones) */
  PREEMPT_ASM_MEMORY = 1, /* loads, stores, atomics, fences (flags below say which) */
  PREEMPT_ASM_UNSAFE = 2, /* anything else: a hazard below says what */
} preempt_asm_class;

/* Why an instruction is UNSAFE. */
typedef enum preempt_asm_hazard {
  PREEMPT_ASM_NO_HAZARD = 0,
  PREEMPT_ASM_GRID,     /* %ctaid, %nctaid, %gridid; clusters (%cluster*, .cluster, ::cluster, mapa, getctarank) */
  PREEMPT_ASM_CLOCK,    /* %clock, %clock64, %globaltimer*, %pm* */
  PREEMPT_ASM_ENVREG,   /* %envreg* (grid-sync workspace, launch environment) */
  PREEMPT_ASM_BARRIER,  /* bar, barrier (bar.warp.sync is warp-level, PURE), mbarrier */
  PREEMPT_ASM_EXIT,     /* exit, trap, brkpt */
  PREEMPT_ASM_LEAVES,   /* ret, call, brx.idx, a branch to a label the string does not define */
  PREEMPT_ASM_BRANCH,   /* a label, or a branch to one of the string's own labels */
  PREEMPT_ASM_PLACE,    /* %smid, %nsmid, %warpid, %nwarpid: where the thread runs now */
  PREEMPT_ASM_LAYOUT,   /* %reserved_smem_offset_*, %dynamic_smem_size, %total_smem_size, %aggr_smem_size: the
                           CTA's shared-memory layout (cooperative groups' scratch lives in reserved memory) */
  PREEMPT_ASM_REGISTER, /* another special register: not known harmless */
  PREEMPT_ASM_ASYNC,    /* cp.async*, wgmma, tcgen05, setmaxnreg, griddepcontrol, tensormap, st/red.async */
  PREEMPT_ASM_WAIT,     /* nanosleep */
  PREEMPT_ASM_UNKNOWN,  /* an opcode or directive not on the allow-list, or text the parser does not follow */
  PREEMPT_ASM_HAZARD_COUNT
} preempt_asm_hazard;

/* Hazards under which the persistent-thread conversion refuses the whole kernel:
 * a task loop changes what they see or do (grid registers, clocks, environment
 * registers, CTA barriers, ending the thread, leaving the asm). */
#define PREEMPT_ASM_CONVERSION_HAZARDS                                                                        \
  ((1u << PREEMPT_ASM_GRID) | (1u << PREEMPT_ASM_CLOCK) | (1u << PREEMPT_ASM_ENVREG) |                         \
   (1u << PREEMPT_ASM_BARRIER) | (1u << PREEMPT_ASM_EXIT) | (1u << PREEMPT_ASM_LEAVES))

/* Hazards that only read a register the drain form, which runs the kernel as
 * written, leaves as it was: they neither write memory nor wait for another block. */
#define PREEMPT_ASM_READ_ONLY_HAZARDS ((1u << PREEMPT_ASM_PLACE) | (1u << PREEMPT_ASM_LAYOUT))

/* What a PURE or MEMORY instruction does, as bits. */
enum {
  PREEMPT_ASM_LOAD = 1u << 0,          /* a plain load: ld (weak), ldu, ld.global.nc, tex, suld, ldmatrix */
  PREEMPT_ASM_STORE = 1u << 1,         /* a store of any kind (st, sust, stmatrix) */
  PREEMPT_ASM_VOLATILE_LOAD = 1u << 2, /* ld.volatile, ld.mmio, ld.cv: memory another thread may be changing */
  PREEMPT_ASM_STRONG_LOAD = 1u << 3,   /* ld.relaxed, ld.acquire: an atomic load of the memory model */
  PREEMPT_ASM_ATOMIC = 1u << 4,        /* atom: an atomic whose old value comes back */
  PREEMPT_ASM_REDUCTION = 1u << 5,     /* red, sured: an atomic with no result */
  PREEMPT_ASM_FENCE = 1u << 6,         /* fence, membar: memory ordering only */
  PREEMPT_ASM_PREFETCH = 1u << 7,      /* prefetch, prefetchu */
  PREEMPT_ASM_SHARED = 1u << 8,        /* an access to .shared */
  PREEMPT_ASM_GENERIC = 1u << 9,       /* an access with no state space (it may be shared memory) */
  PREEMPT_ASM_CLOBBER = 1u << 10,      /* the IR's "~{memory}" clobber */
  PREEMPT_ASM_INDIRECT = 1u << 11,     /* an indirect memory operand in the IR's constraints ("*m") */
  PREEMPT_ASM_LANES = 1u << 12,        /* warp-level: shfl, vote, match, redux, activemask, elect, mma,
                                          bar.warp.sync: the lanes named must run it together */
  PREEMPT_ASM_SIDE_EFFECTS = 1u << 13, /* the IR marks the call sideeffect (asm volatile) */
};

/* One statement of the string. Spans are byte offsets into the text. */
typedef struct preempt_asm_instruction {
  uint32_t offset, length;               /* the statement, predicate included, without its ';' */
  uint32_t opcode_offset, opcode_length; /* "cvt.rn.bf16.f32"; a label's name; a directive (".reg") */
  uint32_t root_length;                  /* the opcode's root, its first part: "cvt" */
  uint8_t asm_class;                     /* preempt_asm_class */
  uint8_t hazard;                        /* preempt_asm_hazard (NO_HAZARD unless UNSAFE) */
  uint8_t predicated;                    /* "@p", "@!p" */
  uint8_t is_label;
  uint32_t flags;                        /* PREEMPT_ASM_* bits */
  const char *why;                       /* what it does, worded to follow "inline assembly that" */
} preempt_asm_instruction;

/* Splits `text` (an IR asm string: operands $0 or ${0:x}, $$ a '$'; or a CUDA
 * source string: operands %0, %% a '%') into statements on ';' and scope braces,
 * skipping comments, and classifies each. Writes the first `capacity` into `out`
 * (which may be NULL with capacity 0) and returns how many there are. A scope
 * brace left open or closed twice gives one more statement, UNKNOWN. */
size_t preempt_asm_parse(const char *text, size_t length, preempt_asm_instruction *out, size_t capacity);

/* An instruction a rule stops at, for a remark. */
typedef struct preempt_asm_finding {
  uint32_t offset, length; /* the instruction in the text; length 0: the IR facts decided, or nothing found */
  const char *why;         /* NULL: nothing found */
  uint32_t hazard;         /* the instruction's preempt_asm_hazard: NO_HAZARD for memory and the IR facts */
} preempt_asm_finding;

typedef struct preempt_asm_summary {
  preempt_asm_class asm_class; /* the worst of its instructions; at least MEMORY with a memory clobber or operand */
  uint32_t flags;              /* every instruction's PREEMPT_ASM_* bits, and the IR facts' */
  uint32_t hazards;            /* 1u << hazard of every UNSAFE instruction */
  uint32_t instruction_count;
  preempt_asm_finding unsafe;     /* the first UNSAFE instruction */
  preempt_asm_finding not_pure;   /* the first instruction (or IR fact) that is not PURE */
  preempt_asm_finding conversion; /* the first with a hazard of PREEMPT_ASM_CONVERSION_HAZARDS */
  preempt_asm_finding drain;      /* the first the drain form refuses: UNSAFE (but for READ_ONLY_HAZARDS), or a
                                     load of memory another block may be writing (volatile, relaxed/acquire), or
                                     an atom (its result comes back) */
  preempt_asm_finding writes;     /* the first that may write memory: a store or an atomic, or UNSAFE (but for
                                     READ_ONLY_HAZARDS; the text is what runs: a memory clobber alone writes
                                     nothing) */
  preempt_asm_finding intask;     /* the first in-task points refuse: any that is not PURE but a prefetch, which
                                     reads no value and writes nothing (a hint; CUB's transform kernels prefetch
                                     their tiles); the text is what runs, so a memory clobber or operand alone
                                     refuses nothing (SharedLiveness.cpp takes such a call to read any memory) */
} preempt_asm_summary;

/* Classifies a whole asm call: its text as preempt_asm_parse does, and the
 * call's IR facts: its constraint string (NULL for none; "~{memory}" makes the
 * string MEMORY at least, and so does an indirect memory operand "*m") and
 * whether it is marked sideeffect. Returns 0. */
int preempt_asm_classify(const char *text, size_t length, const char *constraints, int side_effects,
                         preempt_asm_summary *summary);

/* Whether the call computes nothing but a function of its operands, in its own
 * thread: PURE, no warp-level instruction, not sideeffect. Such a call can be
 * computed again (CTXBack §III-B's re-execution) or moved like arithmetic. */
int preempt_asm_is_recomputable(const preempt_asm_summary *summary);

#ifdef __cplusplus
}
#endif
#endif
