/* relaunch_publisher_ptx.h: the PTX of the runtime's relaunch publisher kernel (relaunch_publisher_cuda.c).
 * EffiSha §6 (stream order across evictions); a header of its own so that a test can assemble it with ptxas. */
#ifndef PREEMPT_RELAUNCH_PUBLISHER_PTX_H
#define PREEMPT_RELAUNCH_PUBLISHER_PTX_H

/* Control-block offsets it hard-codes: task_word 0, done_word 16,
 * relaunch_word 32, done_generation 48, drain_hold 52; lane = generation & 1; tags are
 * generation << 32 (control_block.h; relaunch_publisher_cuda.c asserts them). */
/* One thread, enqueued after a relaunch on the same stream, so every write
 * of the relaunch's tasks is visible when it runs. It takes the relaunch's
 * count out of relaunch_word[lane] (exchange: the next relaunch starts from
 * 0), adds it to done_word[lane] (installing the generation there if the
 * first wave never did, as the kernels' tagged add does), and if that
 * completes the launch presets the other lane for the next generation and
 * publishes done_generation after a fence, then clears drain_hold (0 already
 * unless the launch ran in the drain form and was evicted). Written as PTX so that the
 * runtime stays a C library; the driver compiles it for the GPU at hand. */
static const char publisher_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry preempt_publish_relaunch(.param .u64 control_param, .param .u32 generation_param,\n"
    "                                         .param .u32 task_count_param)\n"
    "{\n"
    "  .reg .pred %p<8>;\n"
    "  .reg .b32 %r<12>;\n"
    "  .reg .b64 %rd<20>;\n"
    "  ld.param.u64 %rd1, [control_param];\n"
    "  ld.param.u32 %r1, [generation_param];\n"
    "  ld.param.u32 %r2, [task_count_param];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  and.b32 %r3, %r1, 1;\n"
    "  mul.wide.u32 %rd2, %r3, 8;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"            /* this lane: task_word +0, done_word +16, relaunch_word +32 */
    "  cvt.u64.u32 %rd4, %r1;\n"               /* generation */
    "  shl.b64 %rd5, %rd4, 32;\n"              /* its tag */
    "  atom.global.exch.b64 %rd6, [%rd3+32], %rd5;\n"
    "  shr.u64 %rd7, %rd6, 32;\n"
    "  setp.ne.u64 %p1, %rd7, %rd4;\n"         /* an older generation's word: nothing of this launch */
    "  @%p1 bra DONE;\n"
    "  cvt.u32.u64 %r4, %rd6;\n"
    "  setp.eq.u32 %p2, %r4, 0;\n"
    "  @%p2 bra DONE;\n"
    "  cvt.u64.u32 %rd8, %r4;\n"
    "ADD:\n"
    "  ld.relaxed.gpu.global.u64 %rd9, [%rd3+16];\n"
    "  shr.u64 %rd10, %rd9, 32;\n"
    "  setp.ne.u64 %p3, %rd10, %rd4;\n"
    "  @%p3 bra INSTALL;\n"
    "  atom.global.add.u64 %rd11, [%rd3+16], %rd8;\n"
    "  shr.u64 %rd12, %rd11, 32;\n"
    "  setp.ne.u64 %p4, %rd12, %rd4;\n"
    "  @%p4 bra ADD;\n"
    "  cvt.u32.u64 %r5, %rd11;\n"
    "  add.u32 %r6, %r5, %r4;\n"
    "  bra.uni CHECK;\n"
    "INSTALL:\n"
    "  or.b64 %rd13, %rd5, %rd8;\n"
    "  atom.global.cas.b64 %rd14, [%rd3+16], %rd9, %rd13;\n"
    "  setp.ne.u64 %p5, %rd14, %rd9;\n"
    "  @%p5 bra ADD;\n"
    "  mov.u32 %r6, %r4;\n"
    "CHECK:\n"
    "  setp.ne.u32 %p6, %r6, %r2;\n"
    "  @%p6 bra DONE;\n"
    "  add.u32 %r7, %r1, 1;\n"                 /* the next generation: 0 is never used */
    "  setp.eq.u32 %p7, %r7, 0;\n"
    "  selp.b32 %r7, 1, %r7, %p7;\n"
    "  and.b32 %r8, %r7, 1;\n"
    "  setp.eq.u32 %p7, %r8, %r3;\n"           /* the wrap: same lane, still in use: no preset */
    "  @%p7 bra PUBLISH;\n"
    "  mul.wide.u32 %rd15, %r8, 8;\n"
    "  add.s64 %rd16, %rd1, %rd15;\n"
    "  cvt.u64.u32 %rd17, %r7;\n"
    "  shl.b64 %rd18, %rd17, 32;\n"
    "  st.relaxed.gpu.global.u64 [%rd16], %rd18;\n"
    "  st.relaxed.gpu.global.u64 [%rd16+16], %rd18;\n"
    "  st.relaxed.gpu.global.u64 [%rd16+32], %rd18;\n"
    "PUBLISH:\n"
    "  membar.gl;\n"
    "  st.relaxed.gpu.global.u32 [%rd1+48], %r1;\n"
    "  mov.u32 %r9, 0;\n"
    "  st.relaxed.gpu.global.u32 [%rd1+52], %r9;\n" /* drain_hold: the drained launch's stream moves on */
    "DONE:\n"
    "  ret;\n"
    "}\n";

#endif

