/* test_inline_asm.c: the inline-assembly classifier (lib/inline_asm.c) on real strings of CUDA 13's headers.
 * Issue 39 item 4; docs/persistent-threads.md "Refusals" (what the conversion, the drain form and in-task points refuse). */
#include "preempt/inline_asm.h"

#include "check.h"

#include <string.h>

typedef struct asm_case {
  const char *text, *constraints;
  int side_effects;
} asm_case;

/* As clang 22 spells them in IR (operands $0, "$$" a '$') after inlining cuda_fp16.hpp, cuda_bf16.hpp,
 * cuda_fp8.hpp and CUB's util_ptx.cuh into a kernel (__hadd, __hmul, __hfma, hexp, hsqrt, h2rcp on half and
 * bf16, __float2bfloat16, __nv_fp8_e4m3, cub::BFE, __funnelshift_l, __vabsdiffu4, ...): register work only. */
static const asm_case pure_from_headers[] = {
    {"{  cvt.rn.f16.f32 $0, $1;}\n", "=h,f", 0},
    {"{  mov.b32 $0, {$1,$2};}\n", "=r,h,h", 0},
    {"{add.f16 $0,$1,$2;\n}", "=h,h,h", 0},
    {"{mul.f16 $0,$1,$2;\n}", "=h,h,h", 0},
    {"{fma.rn.f16 $0,$1,$2,$3;\n}", "=h,h,h,h", 0},
    {"{  cvt.f32.f16 $0, $1;}\n", "=f,h", 0},
    {"{rcp.approx.ftz.f32 $0, $1;\n}", "=f,f", 0},
    {"{abs.f16 $0,$1;\n}", "=h,h", 0},
    {"{ .reg .pred __$$temp3;\n  setp.lt.f16  __$$temp3, $1, $2;\n  selp.u16 $0, 1, 0, __$$temp3;}", "=h,h,h", 0},
    {
         "{.reg.b32         f;        \n"
         " .reg.b16         r;        \n"
         "  mov.b16         r,$1;     \n"
         "  cvt.f32.f16     f,r;      \n"
         "  sqrt.approx.ftz.f32   f,f;  \n"
         "  cvt.rn.f16.f32      r,f;  \n"
         "  mov.b16         $0,r;     \n"
         "}",
         "=h,h", 0},
    {
         "{.reg.b32         f, C, nZ;       \n"
         " .reg.b16         h,r;            \n"
         "  mov.b16         h,$1;           \n"
         "  cvt.f32.f16     f,h;            \n"
         "  mov.b32         C, 0x3fb8aa3bU; \n"
         "  mov.b32         nZ, 0x80000000U;\n"
         "  fma.rn.f32      f,f,C,nZ;       \n"
         "  ex2.approx.ftz.f32  f,f;        \n"
         "  cvt.rn.f16.f32      r,f;        \n"
         "{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0X1F79U;\n"
         "  mov.b16 ulp,0x9400U;\n"
         "  set.eq.f16.f16 p,h, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0X25CFU;\n"
         "  mov.b16 ulp,0x9400U;\n"
         "  set.eq.f16.f16 p,h, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0XC13BU;\n"
         "  mov.b16 ulp,0x0400U;\n"
         "  set.eq.f16.f16 p,h, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0XC1EFU;\n"
         "  mov.b16 ulp,0x0200U;\n"
         "  set.eq.f16.f16 p,h, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "  mov.b16         $0,r;           \n"
         "}",
         "=h,h", 0},
    {
         "{.reg.b32         f, C;           \n"
         " .reg.b16         r,h;            \n"
         "  mov.b16         h,$1;           \n"
         "  cvt.f32.f16     f,h;            \n"
         "  lg2.approx.ftz.f32  f,f;        \n"
         "  mov.b32         C, 0x3f317218U;  \n"
         "  mul.f32         f,f,C;          \n"
         "  cvt.rn.f16.f32      r,f;        \n"
         "{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0X160DU;\n"
         "  mov.b16 ulp,0x9C00U;\n"
         "  set.eq.f16.f16 p,h, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0X3BFEU;\n"
         "  mov.b16 ulp,0x8010U;\n"
         "  set.eq.f16.f16 p,h, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0X3C0BU;\n"
         "  mov.b16 ulp,0x8080U;\n"
         "  set.eq.f16.f16 p,h, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0X6051U;\n"
         "  mov.b16 ulp,0x1C00U;\n"
         "  set.eq.f16.f16 p,h, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "  mov.b16         $0,r;           \n"
         "}",
         "=h,h", 0},
    {"sub.rn.f32 $0, $1, $2;", "=f,f,f", 0},
    {
         "{\n"
         "\t  .reg.b16 i,r,t;     \n"
         "\t  mov.b16 r, $0;      \n"
         "\t  mov.b16 i, $1;      \n"
         "\t  and.b16 t, r, 0x8000U; \n"
         "\t  abs.f16 r, r;   \n"
         "\t  abs.f16 i, i;   \n"
         "\t{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0X32B3U;\n"
         "  mov.b16 ulp,0x0800U;\n"
         "  set.eq.f16.f16 p,i, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b16 spc, ulp, p;\n"
         "  mov.b16 spc,0X5CB0U;\n"
         "  mov.b16 ulp,0x9000U;\n"
         "  set.eq.f16.f16 p,i, spc;\n"
         "  fma.rn.f16 r,p,ulp,r;\n"
         "}\n"
         "  or.b16  r,r,t;      \n"
         "\t  mov.b16 $0, r;      \n"
         "}\n",
         "=h,h,0", 0},
    {"{neg.f16 $0,$1;\n}", "=h,h", 0},
    {"{add.f16x2 $0,$1,$2;\n}", "=r,r,r", 0},
    {"{mul.f16x2 $0,$1,$2;\n}", "=r,r,r", 0},
    {
         "{.reg.b16         hl, hu;         \n"
         " .reg.b32         h,r,fl,fu,C,nZ; \n"
         "  mov.b32         {hl, hu}, $1;   \n"
         "  mov.b32         h, $1;          \n"
         "  cvt.f32.f16     fl, hl;         \n"
         "  cvt.f32.f16     fu, hu;         \n"
         "  mov.b32         C, 0x3fb8aa3bU; \n"
         "  mov.b32         nZ, 0x80000000U;\n"
         "  fma.rn.f32      fl,fl,C,nZ;     \n"
         "  fma.rn.f32      fu,fu,C,nZ;     \n"
         "  ex2.approx.ftz.f32  fl, fl;     \n"
         "  ex2.approx.ftz.f32  fu, fu;     \n"
         "  cvt.rn.f16.f32      hl, fl;     \n"
         "  cvt.rn.f16.f32      hu, fu;     \n"
         "  mov.b32         r, {hl, hu};    \n"
         "{.reg.b32 spc, ulp, p;\n"
         "  mov.b32 spc,0X1F791F79U;\n"
         "  mov.b32 ulp,0x94009400U;\n"
         "  set.eq.f16x2.f16x2 p,h, spc;\n"
         "  fma.rn.f16x2 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b32 spc, ulp, p;\n"
         "  mov.b32 spc,0X25CF25CFU;\n"
         "  mov.b32 ulp,0x94009400U;\n"
         "  set.eq.f16x2.f16x2 p,h, spc;\n"
         "  fma.rn.f16x2 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b32 spc, ulp, p;\n"
         "  mov.b32 spc,0XC13BC13BU;\n"
         "  mov.b32 ulp,0x04000400U;\n"
         "  set.eq.f16x2.f16x2 p,h, spc;\n"
         "  fma.rn.f16x2 r,p,ulp,r;\n"
         "}\n"
         "{.reg.b32 spc, ulp, p;\n"
         "  mov.b32 spc,0XC1EFC1EFU;\n"
         "  mov.b32 ulp,0x02000200U;\n"
         "  set.eq.f16x2.f16x2 p,h, spc;\n"
         "  fma.rn.f16x2 r,p,ulp,r;\n"
         "}\n"
         "  mov.b32         $0, r;  \n"
         "}",
         "=r,r", 0},
    {
         "{.reg.b16         hl, hu;         \n"
         " .reg.b32         fl, fu;         \n"
         "  mov.b32         {hl, hu}, $1;   \n"
         "  cvt.f32.f16     fl, hl;         \n"
         "  cvt.f32.f16     fu, hu;         \n"
         "  rcp.approx.ftz.f32   fl, fl;     \n"
         "  rcp.approx.ftz.f32   fu, fu;     \n"
         "  cvt.rn.f16.f32      hl, fl;     \n"
         "  cvt.rn.f16.f32      hu, fu;     \n"
         "  mov.b32         $0, {hl, hu};   \n"
         "}",
         "=r,r", 0},
    {"{fma.rn.f16x2 $0,$1,$2,$3;\n}", "=r,r,r,r", 0},
    {"{.reg .f16 low,high;\n mov.b32 {low,high}, $1;\n mov.b16 $0, low;}", "=h,r", 0},
    {"{.reg .f16 low,high;\n mov.b32 {low,high}, $1;\n mov.b16 $0, high;}", "=h,r", 0},
    {"{.reg .f16 low,high;\n  mov.b32 {low,high},$1;\n  cvt.f32.f16 $0, low;}\n", "=f,r", 0},
    {"{max.f16 $0,$1,$2;\n}", "=h,h,h", 0},
    {"{  cvt.rn.bf16.f32 $0, $1;}\n", "=h,f", 0},
    {"{ add.bf16 $0,$1,$2; }\n", "=h,h,h", 0},
    {"{ mul.bf16 $0,$1,$2; }\n", "=h,h,h", 0},
    {"{fma.rn.bf16 $0,$1,$2,$3;\n}", "=h,h,h,h", 0},
    {"{ cvt.f32.bf16 $0, $1;}\n", "=f,h", 0},
    {"{ div.approx.f32 $0, $1, $2; }", "=f,f,f", 0},
    {"{ sqrt.approx.f32 $0, $0; }", "=f,0", 0},
    {"{ ex2.approx.f32 $0, $0; }", "=f,0", 0},
    {"{  cvt.rz.bf16.f32 $0, $1;}\n", "=h,f", 0},
    {"{neg.bf16 $0,$1;\n}", "=h,h", 0},
    {"{ add.bf16x2 $0,$1,$2; }\n", "=r,r,r", 0},
    {"{ mul.bf16x2 $0,$1,$2; }\n", "=r,r,r", 0},
    {
         "{.reg.b16         hl, hu;         \n"
         " .reg.b32         h,r,fl,fu, C;   \n"
         "  mov.b32         {hl, hu}, $1;   \n"
         "  mov.b32         h, $1;          \n"
         "  mov.b32         fl, {0,hl};     \n"
         "  mov.b32         fu, {0,hu};     \n"
         "  mov.b32         C, 0x3FB8AA3CU;  \n"
         "  mul.f32         fl,fl,C;        \n"
         "  mul.f32         fu,fu,C;        \n"
         "  ex2.approx.f32      fl, fl;     \n"
         "  ex2.approx.f32      fu, fu;     \n"
         "  cvt.rn.bf16.f32    hl, fl;     \n"
         "  cvt.rn.bf16.f32    hu, fu;     \n"
         "  mov.b32         r, {hl, hu};    \n"
         "  mov.b32         $0, r;  \n"
         "}",
         "=r,r", 0},
    {"{fma.rn.bf16x2 $0,$1,$2,$3;\n}", "=r,r,r,r", 0},
    {"{.reg .b16 low,high;\n mov.b32 {low,high}, $1;\n mov.b16 $0, low;}", "=h,r", 0},
    {"{.reg .b16 low,high;\n mov.b32 {low,high}, $1;\n mov.b16 $0, high;}", "=h,r", 0},
    {"{ rcp.approx.f32 $0, $0; }", "=f,0", 0},
    {"{cvt.rn.satfinite.e4m3x2.f32 $0, $2, $1;}\n", "=h,f,f", 0},
    {"{cvt.rn.satfinite.e5m2x2.f32 $0, $2, $1;}\n", "=h,f,f", 0},
    {"{cvt.rn.f16x2.e4m3x2 $0, $1;}\n", "=r,h", 0},
    {"{cvt.f32.f16 $0, $1;}\n", "=f,h", 0},
    {"{cvt.rn.f16x2.e5m2x2 $0, $1;}\n", "=r,h", 0},
    {"bfe.u32 $0, $1, $2, $3;", "=r,r,r,r", 0},
    {"shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r,r,r", 0},
    {"vabsdiff4.u32.u32.u32 $0,$1,$2,$3;", "=r,r,r,r", 0},
    {"mov.u32 $0, %laneid;", "=r", 0},
    {"rcp.approx.ftz.f32 $0,$1;", "=f,f", 0},
    {"{mov.u32 $0, WARP_SZ;\n}", "=r", 0},
    {"{min.f16 $0,$1,$2;\n}", "=h,h,h", 0},
    {"cvt.rn.f16.s32 $0, $1;", "=h,r", 0},
};

/* The same kind of strings as written in the headers (operands %0, "%%" a '%'): register work only. */
static const asm_case pure_from_source[] = {
    {"mov.b64 {%0,%1}, %2;", "=r,=r,l", 1},                                    /* sm_30_intrinsics.hpp */
    {"mov.b64 %0, {%1,%2};", "=l,r,r", 1},                                     /* sm_30_intrinsics.hpp */
    {"{cvt.rz.ue8m0x2.bf16x2 %0, %1;}\n", "=h,r", 0},                          /* cuda_fp8.hpp */
    {"{cvt.rn.bf16x2.ue8m0x2 %0, %1;}\n", "=r,h", 0},                          /* cuda_fp8.hpp */
    {"{set.nan.bf16x2.bf16x2 %0,%1,%1;\n}", "=r,r", 0},                        /* cuda_bf16.hpp */
    {"{ tanh.approx.f32 %0, %0; }", "=f,0", 0},                                /* cuda_fp16.hpp */
    {"{ .reg .b16 f, one, zero;\n  mov.b16 one, 0x3c00U;\n  mov.b16 zero, 0;\n"
     "  set.gtu.f16.f16 f, %1, %2;\n  selp.b16 %0, one, zero, f;}\n", "=h,h,h", 0},
    {"shl.b32 %0, %1, %2;", "=r,r,r", 0},                                      /* cub/util_ptx.cuh */
    {"bfe.u32 %0, %1, %2, %3;", "=r,r,r,r", 0},                                /* cub/util_ptx.cuh */
    {"lop3.b32 %0, %1, %2, %3, 0x96;", "=r,r,r,r", 0},
    {"prmt.b32 %0, %1, %2, %3;", "=r,r,r,r", 0},
    {"mov.u32 %0, %%laneid;", "=r", 1},
    {"mov.u32 %0, %%lanemask_lt;", "=r", 1},
    {"mov.u32 %0, %%tid.x;", "=r", 0},
    {"mov.u32 %0, %%ntid.y;", "=r", 0},
    {"@%p1 add.u32 %0, %1, 1;", "=r,r", 0},
    {"{ .reg .u32 %%r<2>; mov.u32 %%r1, %1; mov.u32 %0, %%r1; }", "=r,r", 0}, /* declared, not special */
    {"{ .reg .u32 %%t; add.u32 %%t, %1, 1; mov.u32 %0, %%t; }", "=r,r", 0},
    {"mov.u32 %0, 1; // exit;\n", "=r", 0},                                    /* comments are not code */
    {"/* bar.sync 0; */ mov.u32 %0, 1;", "=r", 0},
    {"mov.u32 ${0}, ${1:x};", "=r,r", 0},
    {"cvta.to.global.u64 %0, %1;", "=l,l", 0},
    {"{ .reg .b64 %%a; mul.wide.u32 %%a, %1, %2; mov.b64 {%0, _}, %%a; }", "=r,r,r", 0},
    {"createpolicy.fractional.L2::evict_last.b64 %0, 1.0;", "=l", 0},
    {"", "", 1},
};

/* Warp-level: PURE, with the lanes bit. */
static const asm_case lanes[] = {
    {"{  .reg .f32 r0;  .reg .pred p;  shfl.sync.down.b32 r0|p, $1, $2, $3, $5;  @p add.f32 r0, r0, $4;  "
     "mov.f32 $0, r0;}", "=f,f,r,r,f,r", 1},                                  /* CUB's WarpReduce */
    {"{shfl.sync.down.b32 $0,$1,$2,$3,$4;\n}", "=r,r,r,r,r", 1},               /* __shfl_down_sync */
    {"{shfl.sync.bfly.b32 $0,$1,$2,$3,$4;\n}", "=r,r,r,r,r", 1},
    {"shfl.sync.down.b32 %0, %1, %2, %3, %4;", "=r,r,r,r,r", 1},               /* cub/util_ptx.cuh */
    {"shfl.down.b32 %0, %1, %2, %3;", "=r,r,r,r", 1},                          /* sm_30_intrinsics.hpp */
    {"activemask.b32 %0;", "=r", 1},                                           /* sm_30_intrinsics.hpp */
    {"{\n    .reg .pred p;\n    and.b32 %0, %1, %2;    setp.ne.u32 p, %0, 0;\n"
     "    vote.ballot.sync.b32 %0, p, 0xffffffff;\n    @!p not.b32 %0, %0;\n}\n", "=r,r,r", 0}, /* CUB's match_any */
    {"bar.warp.sync %0;", "r", 1},
    {"match.any.sync.b32 %0, %1, %2;", "=r,r,r", 1},
    {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
     "{%10,%11,%12,%13};", "", 1},
};

typedef struct memory_case {
  const char *text, *constraints;
  int side_effects;
  uint32_t flags;  /* bits it must have */
  int drain;       /* the drain form refuses it */
  int writes;      /* it may write memory */
} memory_case;

static const memory_case memory[] = {
    {"ld.global.nc.s32 %0, [%1];", "=r,l", 1, PREEMPT_ASM_LOAD, 0, 0},         /* sm_32_intrinsics.hpp (__ldg) */
    {"ld.global.nc.v4.s32 {%0,%1,%2,%3}, [%4];", "=r,=r,=r,=r,l", 1, PREEMPT_ASM_LOAD, 0, 0},
    {"ld.global.cs.f32 $0, [$1];", "=f,l", 0, PREEMPT_ASM_LOAD, 0, 0},          /* clang's __ldcs */
    {"ld.global.lu.b16 $0, [$1];", "=h,l,~{memory}", 0, PREEMPT_ASM_LOAD | PREEMPT_ASM_CLOBBER, 0, 0},
    {"ld.global.cv.b16 $0, [$1];", "=h,l,~{memory}", 0, PREEMPT_ASM_VOLATILE_LOAD, 1, 0}, /* __ldcv: volatile */
    {"ld.volatile.global.u32 %0, [%1];", "=r,l", 1, PREEMPT_ASM_VOLATILE_LOAD, 1, 0},
    {"ld.acquire.gpu.global.u32 %0, [%1];", "=r,l,~{memory}", 1, PREEMPT_ASM_STRONG_LOAD, 1, 0},
    {"ld.relaxed.gpu.u32 %0, [%1];", "=r,l", 1, PREEMPT_ASM_STRONG_LOAD | PREEMPT_ASM_GENERIC, 1, 0},
    {"ld.shared.u32 %0, [%1];", "=r,r", 1, PREEMPT_ASM_LOAD | PREEMPT_ASM_SHARED, 0, 0},
    {"ld.u32 %0, [%1];", "=r,l", 1, PREEMPT_ASM_LOAD | PREEMPT_ASM_GENERIC, 0, 0},
    {"st.global.wt.f32 [$0], $1;", "l,f,~{memory}", 1, PREEMPT_ASM_STORE | PREEMPT_ASM_CLOBBER, 0, 1}, /* __stwt */
    {"st.global.cg.b16 [$0], $1;", "l,h,~{memory}", 1, PREEMPT_ASM_STORE, 0, 1},
    {"st.volatile.global.u32 [%0], %1;", "l,r", 1, PREEMPT_ASM_STORE, 0, 1},
    {"st.global.v4.f32 [%0], {%1,%2,%3,%4};", "l,f,f,f,f", 1, PREEMPT_ASM_STORE, 0, 1},
    {"{ .reg .pred p; setp.ne.u32 p, %2, 0; @p st.shared.u32 [%0], %1; }", "r,r,r", 1,
     PREEMPT_ASM_STORE | PREEMPT_ASM_SHARED, 0, 1},
    {"st.release.gpu.global.u32 [%0], %1;", "l,r,~{memory}", 1, PREEMPT_ASM_STORE, 0, 1},
    {"atom.add.u32 %0, [%1], %2;", "=r,l,r", 1, PREEMPT_ASM_ATOMIC | PREEMPT_ASM_GENERIC, 1, 1},
    {"atom.global.cas.b32 %0, [%1], %2, %3;", "=r,l,r,r", 1, PREEMPT_ASM_ATOMIC, 1, 1},
    {"red.global.add.u32 [%0], %1;", "l,r", 1, PREEMPT_ASM_REDUCTION, 0, 1},
    {"red.shared.add.u32 [%0], %1;", "r,r", 1, PREEMPT_ASM_REDUCTION | PREEMPT_ASM_SHARED, 0, 1},
    {"membar.gl;", "~{memory}", 1, PREEMPT_ASM_FENCE, 0, 0},
    {"fence.acq_rel.gpu;", "~{memory}", 1, PREEMPT_ASM_FENCE, 0, 0},
    {"prefetch.global.L2::evict_last [%0];", "l", 1, PREEMPT_ASM_PREFETCH, 0, 0},
    {"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];", "=r,=r,=r,=r,r", 1,
     PREEMPT_ASM_LOAD | PREEMPT_ASM_SHARED | PREEMPT_ASM_LANES, 0, 0},
    {"", "~{memory}", 1, PREEMPT_ASM_CLOBBER, 0, 0}, /* a compiler barrier: writes nothing when it runs */
    {"mov.u32 %0, 1;", "=*m", 0, PREEMPT_ASM_INDIRECT, 0, 0},
};

typedef struct unsafe_case {
  const char *text;
  preempt_asm_hazard hazard; /* of the first UNSAFE instruction */
  int conversion;            /* the conversion refuses the kernel */
} unsafe_case;

/* Only reading a register the drain form leaves as it was: the drain form keeps such asm. */
static int read_only(preempt_asm_hazard hazard) {
  return hazard == PREEMPT_ASM_PLACE || hazard == PREEMPT_ASM_LAYOUT;
}

static const unsafe_case unsafe[] = {
    {"mov.u32 %0, %%smid;", PREEMPT_ASM_PLACE, 0},               /* cuda/__ptx get_sreg.h */
    {"mov.u32 $0, %smid;", PREEMPT_ASM_PLACE, 0},
    {"mov.u32 %0, %%warpid;", PREEMPT_ASM_PLACE, 0},
    {"mov.u32 %0, %%ctaid.x;", PREEMPT_ASM_GRID, 1},
    {"add.u32 %0, %%nctaid.x, 1;", PREEMPT_ASM_GRID, 1},
    {"mov.u32 %0, %%cluster_ctarank;", PREEMPT_ASM_GRID, 1},
    {"mov.u64 $0, %globaltimer;", PREEMPT_ASM_CLOCK, 1},
    {"mov.u32 %0, %%clock;", PREEMPT_ASM_CLOCK, 1},
    {"mov.u64 %0, %%clock64;", PREEMPT_ASM_CLOCK, 1},
    {"mov.u32 %0, %%envreg2;", PREEMPT_ASM_ENVREG, 1},
    {"mov.u32 %0, %%dynamic_smem_size;", PREEMPT_ASM_LAYOUT, 0},
    /* cooperative_groups/details/memory.h: the scratch in reserved shared memory */
    {"{\n\t .reg .u32 start;\n\t .reg .u64 extended;\n\t mov.u32 start, %%reserved_smem_offset_1;\n\t"
     " cvt.u64.u32 extended, start;\n\t cvta.shared.u64 %0, extended;\n\t}", PREEMPT_ASM_LAYOUT, 0},
    {"mov.u32 %0, %%pm0;", PREEMPT_ASM_CLOCK, 1},
    {"mov.u32 %0, %%current_graph_exec;", PREEMPT_ASM_REGISTER, 0},
    {"bar.sync 0;", PREEMPT_ASM_BARRIER, 1},
    {"barrier.sync.aligned 0;", PREEMPT_ASM_BARRIER, 1},
    {"bar.arrive 1, 64;", PREEMPT_ASM_BARRIER, 1},
    {"exit;", PREEMPT_ASM_EXIT, 1},                              /* cub/util_ptx.cuh ThreadExit */
    {"trap;", PREEMPT_ASM_EXIT, 1},
    {"ret;", PREEMPT_ASM_LEAVES, 1},
    {"call foo, (%0);", PREEMPT_ASM_LEAVES, 1},
    {"@p bra L;", PREEMPT_ASM_LEAVES, 1},                        /* L is not the string's */
    {"{ .reg .pred p; L1: setp.eq.u32 p, %1, 0; @p bra L1; mov.u32 %0, 1; }", PREEMPT_ASM_BRANCH, 0},
    {"{\n\t.reg .pred p;\n\twaitLoop:\n\t\tmbarrier.try_wait.parity.relaxed.cta.shared.b64 p, [%0], %1;\n\t\t"
     "@!p bra waitLoop;\n\t}", PREEMPT_ASM_BRANCH, 1},           /* cuda/__functional/for_each_canceled.h */
    {"nanosleep.u32 %0;", PREEMPT_ASM_WAIT, 0},                  /* crt/sm_70_rt.hpp */
    {"cp.async.ca.shared.global [%0], [%1], 16;", PREEMPT_ASM_ASYNC, 0},
    {"cp.async.wait_all;", PREEMPT_ASM_ASYNC, 0},
    {"setmaxnreg.inc.sync.aligned.u32 240;", PREEMPT_ASM_ASYNC, 0},
    {"griddepcontrol.wait;", PREEMPT_ASM_ASYNC, 0},
    {"st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];", PREEMPT_ASM_ASYNC, 0},
    {"ld.shared::cluster.u32 %0, [%1];", PREEMPT_ASM_GRID, 1},
    {"fence.acq_rel.cluster;", PREEMPT_ASM_GRID, 1},
    {"mapa.shared::cluster.u32 %0, %1, %2;", PREEMPT_ASM_GRID, 1},
    {"frobnicate.b32 %0, %1;", PREEMPT_ASM_UNKNOWN, 0},
    {"frob.clock %0;", PREEMPT_ASM_CLOCK, 1},                    /* unknown, but named like a clock */
    {".shared .b32 x;", PREEMPT_ASM_UNKNOWN, 0},
    {"mov.u32 %0, 1; }", PREEMPT_ASM_UNKNOWN, 0},
    {"{ mov.u32 %0, 1;", PREEMPT_ASM_UNKNOWN, 0},
    {"mov.u32{%0}, 1;", PREEMPT_ASM_UNKNOWN, 0},
};

static int is_opcode(const char *text, const preempt_asm_instruction *I, const char *opcode, const char *root) {
  return I->opcode_length == strlen(opcode) && memcmp(text + I->opcode_offset, opcode, I->opcode_length) == 0 &&
         I->root_length == strlen(root) && memcmp(text + I->opcode_offset, root, I->root_length) == 0;
}

static int quotes(const char *text, const preempt_asm_finding *finding, const char *instruction) {
  return finding->why && finding->length == strlen(instruction) &&
         memcmp(text + finding->offset, instruction, finding->length) == 0;
}

int main(void) {
  preempt_asm_summary s;
  for (size_t k = 0; k < sizeof pure_from_headers / sizeof *pure_from_headers; k++) {
    const asm_case *c = &pure_from_headers[k];
    preempt_asm_classify(c->text, strlen(c->text), c->constraints, c->side_effects, &s);
    if (s.asm_class != PREEMPT_ASM_PURE || s.instruction_count == 0 || s.not_pure.why)
      fprintf(stderr, "not PURE: %s\n", c->text);
    CHECK(s.asm_class == PREEMPT_ASM_PURE && s.instruction_count > 0 && !s.not_pure.why && !s.drain.why);
    CHECK(preempt_asm_is_recomputable(&s));
  }
  for (size_t k = 0; k < sizeof pure_from_source / sizeof *pure_from_source; k++) {
    const asm_case *c = &pure_from_source[k];
    preempt_asm_classify(c->text, strlen(c->text), c->constraints, c->side_effects, &s);
    if (s.asm_class != PREEMPT_ASM_PURE)
      fprintf(stderr, "not PURE: %s\n", c->text);
    CHECK(s.asm_class == PREEMPT_ASM_PURE && !s.unsafe.why && !s.conversion.why && !s.drain.why && !s.writes.why);
    CHECK(!(s.flags & PREEMPT_ASM_LANES));
    /* asm volatile: PURE, but not computed again. */
    CHECK(preempt_asm_is_recomputable(&s) == !c->side_effects);
  }
  for (size_t k = 0; k < sizeof lanes / sizeof *lanes; k++) {
    const asm_case *c = &lanes[k];
    preempt_asm_classify(c->text, strlen(c->text), c->constraints, c->side_effects, &s);
    if (s.asm_class != PREEMPT_ASM_PURE || !(s.flags & PREEMPT_ASM_LANES))
      fprintf(stderr, "not PURE across lanes: %s\n", c->text);
    CHECK(s.asm_class == PREEMPT_ASM_PURE && (s.flags & PREEMPT_ASM_LANES));
    CHECK(!preempt_asm_is_recomputable(&s));
  }
  for (size_t k = 0; k < sizeof memory / sizeof *memory; k++) {
    const memory_case *c = &memory[k];
    preempt_asm_classify(c->text, strlen(c->text), c->constraints, c->side_effects, &s);
    int ok = s.asm_class == PREEMPT_ASM_MEMORY && (s.flags & c->flags) == c->flags && !s.unsafe.why &&
             !s.conversion.why && !!s.drain.why == c->drain && !!s.writes.why == c->writes && s.not_pure.why;
    if (!ok)
      fprintf(stderr, "memory case wrong (class %d, flags %#x, drain %d, writes %d): %s\n", s.asm_class, s.flags,
              !!s.drain.why, !!s.writes.why, c->text);
    CHECK(ok);
    CHECK(!preempt_asm_is_recomputable(&s));
    /* In-task points refuse every memory case but a prefetch and the IR facts alone (a clobber, an operand). */
    int intask = !(c->flags == PREEMPT_ASM_PREFETCH || c->flags == PREEMPT_ASM_CLOBBER || c->flags == PREEMPT_ASM_INDIRECT);
    if (!!s.intask.why != intask)
      fprintf(stderr, "memory case: in-task %s, expected %s: %s\n", s.intask.why ? "refuses" : "keeps",
              intask ? "refuses" : "keeps", c->text);
    CHECK(!!s.intask.why == intask);
  }
  for (size_t k = 0; k < sizeof unsafe / sizeof *unsafe; k++) {
    const unsafe_case *c = &unsafe[k];
    preempt_asm_instruction first[8];
    size_t count = preempt_asm_parse(c->text, strlen(c->text), first, 8);
    preempt_asm_classify(c->text, strlen(c->text), "", 1, &s);
    int hazard = -1;
    for (size_t i = 0; i < count && i < 8; i++)
      if (first[i].asm_class == PREEMPT_ASM_UNSAFE) {
        hazard = first[i].hazard;
        break;
      }
    int drain = !read_only(c->hazard);
    int ok = s.asm_class == PREEMPT_ASM_UNSAFE && hazard == (int)c->hazard && s.unsafe.why &&
             !!s.drain.why == drain && s.not_pure.why && !!s.writes.why == drain &&
             !!s.conversion.why == c->conversion && (s.hazards & (1u << c->hazard));
    if (!ok)
      fprintf(stderr, "unsafe case wrong (class %d, first hazard %d, conversion %d): %s\n", s.asm_class, hazard,
              !!s.conversion.why, c->text);
    CHECK(ok);
    CHECK(s.intask.why);
  }

  /* Statements, their opcodes and roots. */
  {
    const char *text = "{.reg .f16 low,high;\n mov.b32 {low,high}, $1;\n mov.b16 $0, high;}";
    preempt_asm_instruction I[4];
    CHECK_EQ_U64(preempt_asm_parse(text, strlen(text), I, 4), 3);
    CHECK(is_opcode(text, &I[0], ".reg", ".reg"));
    CHECK(is_opcode(text, &I[1], "mov.b32", "mov"));
    CHECK(is_opcode(text, &I[2], "mov.b16", "mov"));
    CHECK(I[1].length == strlen("mov.b32 {low,high}, $1") && memcmp(text + I[1].offset, "mov.b32", 7) == 0);
    CHECK(I[0].asm_class == PREEMPT_ASM_PURE && I[1].asm_class == PREEMPT_ASM_PURE);
    /* Counting without room. */
    CHECK_EQ_U64(preempt_asm_parse(text, strlen(text), NULL, 0), 3);
  }
  {
    const char *text = "{ .reg .pred p; L1: setp.eq.u32 p, %1, 0; @p bra L1; mov.u32 %0, 1; }";
    preempt_asm_instruction I[8];
    CHECK_EQ_U64(preempt_asm_parse(text, strlen(text), I, 8), 5);
    CHECK(I[1].is_label && I[1].hazard == PREEMPT_ASM_BRANCH && is_opcode(text, &I[1], "L1", "L1"));
    CHECK(is_opcode(text, &I[2], "setp.eq.u32", "setp"));
    CHECK(I[3].predicated && is_opcode(text, &I[3], "bra", "bra") && I[3].hazard == PREEMPT_ASM_BRANCH);
    CHECK(!I[4].predicated && is_opcode(text, &I[4], "mov.u32", "mov"));
  }
  {
    const char *text = "ld.shared::cta.u32 %0, [%1];";
    preempt_asm_instruction I[1];
    CHECK_EQ_U64(preempt_asm_parse(text, strlen(text), I, 1), 1);
    CHECK(is_opcode(text, &I[0], "ld.shared::cta.u32", "ld"));
    CHECK(I[0].asm_class == PREEMPT_ASM_MEMORY && (I[0].flags & PREEMPT_ASM_SHARED));
  }
  /* Operands are read for special registers only, not checked for syntax: ptxas does that. */
  {
    const char *text = "mov.u32 %0, 1 +;";
    preempt_asm_classify(text, strlen(text), NULL, 0, &s);
    CHECK(s.asm_class == PREEMPT_ASM_PURE);
  }

  /* Findings quote the instruction the rule stops at, and name why. */
  {
    const char *text = "{ .reg .b32 t;\n  add.u32 t, %1, 1;\n  ld.volatile.global.u32 %0, [%2];\n"
                       "  mov.u32 %3, %%smid;\n  mov.u32 %4, %%ctaid.x;\n  st.global.u32 [%2], t;\n}";
    preempt_asm_classify(text, strlen(text), "=r,r,l,=r,=r", 1, &s);
    CHECK(s.asm_class == PREEMPT_ASM_UNSAFE);
    CHECK(quotes(text, &s.not_pure, "ld.volatile.global.u32 %0, [%2]"));
    CHECK(quotes(text, &s.drain, "ld.volatile.global.u32 %0, [%2]"));
    CHECK(s.drain.why && strcmp(s.drain.why, "reads volatile memory") == 0);
    CHECK(s.drain.hazard == PREEMPT_ASM_NO_HAZARD && s.unsafe.hazard == PREEMPT_ASM_PLACE);
    CHECK(quotes(text, &s.unsafe, "mov.u32 %3, %%smid"));
    CHECK(quotes(text, &s.writes, "mov.u32 %4, %%ctaid.x")); /* UNSAFE: may do anything; %smid only reads */
    CHECK(quotes(text, &s.conversion, "mov.u32 %4, %%ctaid.x"));
    CHECK(s.conversion.why && strcmp(s.conversion.why, "reads a grid register") == 0);
    CHECK(s.conversion.hazard == PREEMPT_ASM_GRID && s.writes.hazard == PREEMPT_ASM_GRID);
    CHECK_EQ_U64(s.instruction_count, 6);
    CHECK(s.hazards == ((1u << PREEMPT_ASM_PLACE) | (1u << PREEMPT_ASM_GRID)));
    CHECK((s.flags & (PREEMPT_ASM_VOLATILE_LOAD | PREEMPT_ASM_STORE | PREEMPT_ASM_SIDE_EFFECTS)) ==
          (PREEMPT_ASM_VOLATILE_LOAD | PREEMPT_ASM_STORE | PREEMPT_ASM_SIDE_EFFECTS));
  }
  {
    /* An unknown opcode first, a grid register after it: the conversion still sees the second. */
    const char *text = "frob %0; mov.u32 %1, %%ctaid.x;";
    preempt_asm_classify(text, strlen(text), NULL, 0, &s);
    CHECK(quotes(text, &s.unsafe, "frob %0"));
    CHECK(quotes(text, &s.conversion, "mov.u32 %1, %%ctaid.x"));
  }
  {
    /* CUB's tile prefetch (cub/device/dispatch/kernels/transform.cuh), volatile with a memory clobber: not PURE,
     * yet in-task points keep the kernel; a store after it refuses them, quoted. */
    const char *text = "prefetch.global.L2 [%0];";
    preempt_asm_classify(text, strlen(text), "l,~{memory}", 1, &s);
    CHECK(s.asm_class == PREEMPT_ASM_MEMORY && s.not_pure.why && !s.intask.why && !s.writes.why && !s.drain.why);
    const char *stored = "prefetch.global.L2 [%0]; st.global.u32 [%0], %1;";
    preempt_asm_classify(stored, strlen(stored), "l,r", 1, &s);
    CHECK(quotes(stored, &s.intask, "st.global.u32 [%0], %1"));
  }
  {
    /* A memory clobber alone: MEMORY, found with no instruction, writing nothing. */
    preempt_asm_classify("", 0, "~{memory}", 1, &s);
    CHECK(s.asm_class == PREEMPT_ASM_MEMORY && s.not_pure.why && s.not_pure.length == 0 && !s.writes.why);
    CHECK(strcmp(s.not_pure.why, "clobbers memory") == 0);
    preempt_asm_classify(NULL, 0, NULL, 0, &s);
    CHECK(s.asm_class == PREEMPT_ASM_PURE && s.instruction_count == 0);
  }
  CHECK_DONE("test_inline_asm");
}
