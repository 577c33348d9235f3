"""Context-parallel decode on 2 GPUs (docs/spec.md §13): two worker processes
(tests/cp_worker.py), dense and sparse, torch.distributed and cupy.cuda.nccl,
torch tensors and a CUDA graph, each compared with the reference and with the
single-GPU decode of the whole cache.  Skipped without 2 GPUs."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
# NVLink multicast stays off in every process (the device machine's rule).
NO_MULTICAST = dict(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")


def _gpu_count() -> int:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def test_two_ranks_match_reference_and_single_gpu(tmp_path, rng):
    if _gpu_count() < 2:
        pytest.skip("needs 2 GPUs")
    seed = int(rng.integers(2**62))
    env = dict(os.environ, **NO_MULTICAST, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE, os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "cp_worker.py"), "--rank", str(r),
                               "--world", "2", "--rendezvous", str(tmp_path), "--seed", str(seed)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
             for r in range(2)]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=240)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            logs.append(p.communicate()[0] + "\n[timed out]")
    text = "\n".join(f"---- rank {r} (rc {p.returncode}) ----\n{log}" for r, (p, log) in enumerate(zip(procs, logs)))
    results = [json.loads(line[len("CP-RESULT "):]) for log in logs for line in log.splitlines()
               if line.startswith("CP-RESULT ")]
    failed = [r for r in results if not r["ok"]]
    assert not failed, f"seed {seed}: {json.dumps(failed, indent=1)}\n{text[-6000:]}"
    assert all(p.returncode == 0 for p in procs), f"seed {seed}:\n{text[-6000:]}"
    comms = {r["comm"] for r in results}
    # 7 dense + 3 sparse cases per path and rank, plus the graph (and torch tensors)
    expected = 2 * (10 * len(comms) + 1 + ("torch" in comms))
    assert len(results) == expected, f"seed {seed}: {len(results)} results, expected {expected}\n{text[-6000:]}"
    assert "nccl" in comms
