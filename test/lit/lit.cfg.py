# lit.cfg.py: lit configuration for preempt's regression tests.
# Substitutions name LLVM 22's tools explicitly: LLVM 14 is the default clang on our machines.
import os
import sys

import lit.formats

config.name = "preempt"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ll", ".cu", ".cl", ".hip", ".mir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.preempt_binary_root, "test", "lit")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]

bin_dir = config.llvm_bin
plugin = os.path.join(config.preempt_binary_root, "passes", "libpreempt.so")
# Built only when clang 22 has libFuzzer (test/fuzz/CMakeLists.txt); tests needing it say REQUIRES: fuzzer.
fuzz_protocol = os.path.join(config.preempt_binary_root, "test", "fuzz", "fuzz_daemon_protocol")
cuda_flags = (f"-x cuda --cuda-gpu-arch=sm_90 --cuda-path={config.cuda_path} -Wno-unknown-cuda-version -O2 "
              f"-fverify-intermediate-code -fpass-plugin={plugin}")
config.substitutions += [
    ("%clang", os.path.join(bin_dir, "clang")),
    ("%opt", os.path.join(bin_dir, "opt")),
    ("%llc", os.path.join(bin_dir, "llc")),
    ("%FileCheck", os.path.join(bin_dir, "FileCheck")),
    ("%not", os.path.join(bin_dir, "not")),
    ("%plugin", plugin),
    ("%cuda_flags", cuda_flags),
    ("%ptxas", config.ptxas or "false"),
    ("%unit_bin", os.path.join(config.preempt_binary_root, "test", "unit")),
    ("%preempt_report", os.path.join(config.preempt_binary_root, "tools", "preempt-report")),
    ("%preempt_sim", os.path.join(config.preempt_binary_root, "tools", "preempt-sim")),
    ("%preemptd", os.path.join(config.preempt_binary_root, "tools", "preemptd", "preemptd")),
    ("%preemptctl", os.path.join(config.preempt_binary_root, "tools", "preemptctl")),
    ("%daemon_bin", os.path.join(config.preempt_binary_root, "test", "daemon")),
    ("%fake_client", os.path.join(config.preempt_binary_root, "test", "daemon", "fake_client")),
    ("%fuzz_protocol", fuzz_protocol),
    ("%fuzz_sessions", os.path.join(config.preempt_binary_root, "test", "fuzz", "fuzz_daemon_sessions")),
    ("%fuzz_corpus", os.path.join(config.preempt_binary_root, "test", "fuzz", "corpus")),
    ("%python", sys.executable),
    ("%build_root", config.preempt_binary_root),
    ("%runtime_lib", os.path.join(config.preempt_binary_root, "runtime-host")),
    ("%preempt_mem_lib", os.path.join(config.preempt_binary_root, "runtime-host", "libpreempt_mem.so")),
    ("%mem_client", os.path.join(config.preempt_binary_root, "test", "mem", "mem_client")),
    ("%stalled_waiter", os.path.join(config.preempt_binary_root, "test", "mem", "stalled_waiter")),
    # The simulated GPU (test/fake-gpu/fake_cuda.c): the library itself, the folder where it is libnvidia-ml.so.1
    # (LD_LIBRARY_PATH=%fake_nvml_dir lets dlopen("libnvidia-ml.so.1") find it), and NVML's own check.
    ("%fake_cuda_lib", os.path.join(config.preempt_binary_root, "test", "fake-gpu", "libfakecuda.so")),
    ("%fake_nvml_dir", os.path.join(config.preempt_binary_root, "test", "fake-gpu", "nvml")),
    ("%fake_driver_dir", os.path.join(config.preempt_binary_root, "test", "fake-gpu", "driver")),
    ("%nvml_check", os.path.join(config.preempt_binary_root, "test", "fake-gpu", "nvml_check")),
    ("%cuda_lib", os.path.join(config.cuda_path, "lib64")),
    ("%cuda_include", os.path.join(config.cuda_path, "include")),
    ("%spank_plugin", os.path.join(config.preempt_binary_root, "tools", "slurm", "preempt_spank.so")),
]
if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
# The hostile-user tests run clients as other uids (setpriv), which needs root, as CI has.
if hasattr(os, "geteuid") and os.geteuid() == 0:
    config.available_features.add("root")
if os.path.exists(fuzz_protocol):
    config.available_features.add("fuzzer")
# The cluster tests start real servers, which tools/setup.sh installs (munge, slurmctld, slurmd, srun), and load the
# Slurm plugin, built when Slurm's headers are there.
if (all(os.path.exists(p) for p in ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/srun"])
        and os.path.exists(os.path.join(config.preempt_binary_root, "tools", "slurm", "preempt_spank.so"))):
    config.available_features.add("slurm")
# No feature for Prometheus: cluster/prometheus.test must run wherever the tests run (tools/setup.sh installs it, and
# the test fails saying so when it is missing) rather than be skipped.
