"""Benchmark: load + validate a generated 1,000-task workflow folder.

    .venv/bin/python benchmarks/load_1000/bench.py [--tree issue15|bench] [--repeat 5]

``--tree issue15`` (default): issue 15's tree (``benchmarks/trees.py load_tree``: 1,000 tasks,
each with a task.yaml with typed outputs and settings, an instructions.md and a one-tool
python tools.md). ``--tree bench``: the tree below.

``--before DIR`` (issue15 tree): also the code the issue measured (~1.0 s warm on its machine),
checked out in ``DIR`` (``git worktree add DIR 8c2b1f7``): its warm ``load_workflow`` and its
fresh ``folpipe validate``, each in new processes interleaved with ours (the same package
name cannot be imported twice in one process). Its warm time here over the issue's 1.0 s is
how much slower this machine runs than the issue's, and ours divided by it is what the issue's
machine would show.

``--v018 DIR`` (issue15 tree): also folpipe 0.1.8, the project the issue measured (~0.36 s for
this tree), as a baseline in the same process and machine state: its ``TaskLoader().load``
interleaved with ours, and its ``agentflow validate`` in a new process beside ours. ``DIR`` is
its unpacked sdist (``pip download folpipe==0.1.8 --no-deps --no-binary :all:``, then ``tar
xzf``); nothing of it is installed or copied. Its loader checks no rule but the task.yaml
models and executes every python tool block, as ``load_workflow`` (``import_tools=True``)
does.

The tree: a root with 10 branches of 9 sub-branches of 10 leaves (1,000 tasks with the root),
every task with a task.yaml (settings, agent overrides, outputs, a skip_if), every leaf with
instructions.md (a third of them with an include), every sub-branch with a tools.md, a shared
tools.md used by some leaves, a graph group with depends_on edges and a loop group.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from prefect_folpipe.loader import _files
from prefect_folpipe.loader.tools import _toolsmd as toolsmd
from prefect_folpipe.validate import load_workflow, validate_workflow

sys.path.insert(0, str(Path(__file__).parent.parent))
import trees

ROOT_YAML = """\
name: bench
providers:
  default: claude
  claude: {model: claude-sonnet-4-5, api_key_env: ANTHROPIC_API_KEY}
  local: {type: ollama, model: llama3.1:8b}
settings: {max_retries: 2, timeout: 300, parallel_workers: 8}
conditions: {retry_on: [ConnectionError]}
"""
TOOLS_MD = """\
## lookup_{n}
> type: reference

Look things up for group {n}.

## local_{n}
> type: reference
> scope: local

Only for the group.
"""
SHARED_TOOLS = "## search_api\n> type: reference\n\nSearch.\n"


def build(root: Path, branches: int = 10, groups: int = 9, leaves: int = 10) -> int:
    """Write the tree; returns the number of tasks."""
    (root / "shared" / "instructions").mkdir(parents=True)
    (root / "shared" / "instructions" / "style.md").write_text("Be concise.\n")
    (root / "shared" / "tools.md").write_text(SHARED_TOOLS)
    (root / "task.yaml").write_text(ROOT_YAML)
    count = 1
    for b in range(branches):
        branch = root / "subtasks" / f"{b:02d}_branch{b}"
        kind = "graph" if b == 0 else "loop" if b == 1 else "parallel"
        extra = "\n  until: context.done == true\n  max_iterations: 3" if kind == "loop" else ""
        _write(
            branch / "task.yaml",
            f"subtasks:\n  execution_type: {kind}{extra}\nsettings: {{timeout: 600}}\n",
        )
        count += 1
        for g in range(groups):
            group = branch / "subtasks" / f"{g:02d}_group{g}"
            depends = f"depends_on: [group{g - 1}]\n" if kind == "graph" and g else ""
            _write(group / "task.yaml", f"agent: {{temperature: 0.{g}}}\n{depends}")
            _write(group / "tools.md", TOOLS_MD.format(n=f"{b}_{g}"))
            count += 1
            last = b == branches - 1 and g == groups - 1
            for leaf_index in range(leaves - 1 if last else leaves):
                _leaf(group / "subtasks" / f"{leaf_index:02d}_leaf{leaf_index}", leaf_index)
                count += 1
    return count


def _leaf(folder: Path, n: int) -> None:
    provider = "  provider: local\n" if n % 5 == 0 else ""
    shared = "tools: {use_shared: [search_api]}\n" if n % 4 == 0 else ""
    _write(
        folder / "task.yaml",
        f"description: leaf {n}\nsettings: {{max_retries: {n % 3}}}\n"
        f"agent:\n{provider}  model: claude-haiku-4-5\n"
        f"output:\n  answer: str\n  score: float\n{shared}"
        "conditions:\n  skip_if: \"context.get('skip') == true\"\n",
    )
    include = '\n{% include "style" %}\n' if n % 3 == 0 else ""
    _write(folder / "instructions.md", f"Answer question {n}.{include}\n")


def _write(file: Path, text: str) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)


def timed(fn, repeat: int) -> tuple[list[float], list[float]]:  # type: ignore[no-untyped-def]
    """Wall-clock and CPU seconds of each run (CPU time is what a busy machine can't inflate)."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def fresh_process(root: Path, pycache: Path | None) -> float:
    """Wall seconds of a new interpreter importing the package and validating the tree.

    ``pycache``: a bytecode cache folder (as a normal install has); None = compile every
    imported module from source (this VM sets PYTHONDONTWRITEBYTECODE=1). The parse cache is
    off: every tools.md is read (``issue15`` measures it on and off).
    """
    code = (
        "import sys, time; t = time.perf_counter(); "
        "from prefect_folpipe.validate import validate_workflow; "
        "d = validate_workflow(sys.argv[1]); print(time.perf_counter() - t)"
    )
    if pycache is None:
        env = dict(os.environ, FOLPIPE_PARSE_CACHE="0", PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env = installed_env(pycache, FOLPIPE_PARSE_CACHE="0")
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True, env=env
    )
    return float(out.stdout.strip())


def floor(root: Path) -> None:
    """The least any loader does: walk the folder, read every file, parse every task.yaml
    with libyaml (the in-process baseline the loader is compared with, same machine state)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            with open(os.path.join(folder, name), "rb") as handle:
                data = handle.read()
            if name == "task.yaml":
                yaml.load(data, Loader=loader)


def interleaved(fns: dict[str, object], repeat: int) -> dict[str, tuple[list[float], list[float]]]:
    """Each function once per round, alternating, so load changes hit them alike."""
    out: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            (wall,), (cpu,) = timed(fn, 1)
            out[key][0].append(wall)
            out[key][1].append(cpu)
    return out


def installed_env(pycache: Path, **extra: str) -> dict[str, str]:
    """This process's environment with a bytecode cache folder, as an installed package has
    (this VM sets PYTHONDONTWRITEBYTECODE=1, which would compile every module from source in
    each process: ~0.1 s that no installed copy pays)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(pycache), **extra}


def run_child(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float]:
    """Wall seconds of ``cmd`` in a new process, and its CPU seconds (user + system: what load
    on the machine inflates least)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True, env=env, cwd=cwd)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def fresh_cli(
    root: Path, pycache: Path, parse_cache: Callable[[], str]
) -> tuple[float, float, float, float]:
    """Wall seconds of ``folpipe validate <root>`` in a new process and of a new interpreter
    that only imports pydantic and PyYAML (the floor of any such process), then the CPU
    seconds of each (each from a run of its own). ``pycache``: ``installed_env``'s.
    ``parse_cache()``: the ``FOLPIPE_PARSE_CACHE`` each validate process gets (``0``: none)."""

    def wall(cmd: list[str]) -> float:
        return run_child(cmd, installed_env(pycache, FOLPIPE_PARSE_CACHE=parse_cache()))[0]

    def cpu(cmd: list[str]) -> float:
        return run_child(cmd, installed_env(pycache, FOLPIPE_PARSE_CACHE=parse_cache()))[1]

    validate_cmd = [sys.executable, "-m", "prefect_folpipe", "validate", str(root)]
    floor_cmd = [sys.executable, "-c", "import pydantic, yaml"]
    return wall(validate_cmd), wall(floor_cmd), cpu(validate_cmd), cpu(floor_cmd)


FRESH = {
    "kept": "fresh validate, validated before",
    "first": "fresh validate, first time",
    "off": "fresh validate, parse cache off",
}
"""The fresh-process cases: the tree validated before (its tools.md readings in the parse
cache), never validated on this machine (an empty cache: a CI runner, the wall time includes
writing the cache), and the cache turned off."""


def fresh_clis(root: Path, scratch: Path, rounds: int) -> dict[str, list[tuple[float, ...]]]:
    """Each fresh-process case ``rounds`` times, interleaved."""
    pycache, empty = scratch / "pycache", itertools.count()

    def kept() -> str:
        return str(scratch / "parse-cache")

    def first() -> str:
        return str(scratch / f"empty-{next(empty)}")

    fresh_cli(root, pycache, kept)  # fills the bytecode cache and the parse cache
    out: dict[str, list[tuple[float, ...]]] = {key: [] for key in FRESH}
    for _ in range(rounds):
        out["kept"].append(fresh_cli(root, pycache, kept))
        out["first"].append(fresh_cli(root, pycache, first))
        out["off"].append(fresh_cli(root, pycache, lambda: "0"))
    return out


def v018_loader(v018: Path) -> Callable[[Path], object]:
    """folpipe 0.1.8's ``TaskLoader().load``, imported from its unpacked sdist."""
    sys.path.insert(0, str(v018))
    from agentflow.core.loader import TaskLoader  # type: ignore[import-not-found]

    return lambda root: TaskLoader().load(root)


def v018_validate(root: Path, v018: Path, pycache: Path) -> tuple[float, float]:
    """Wall and CPU seconds of folpipe 0.1.8's ``agentflow validate <root>`` in a new process
    (its CLI as its console script runs it), with the same bytecode cache folder as ours."""
    cmd = [sys.executable, "-c", "from agentflow.cli.main import cli; cli()", "validate", str(root)]
    return run_child(cmd, installed_env(pycache, PYTHONPATH=str(v018)))


WARM_CHILD = (
    "import statistics, sys, time; from prefect_folpipe.validate import load_workflow; "
    "load_workflow(sys.argv[1]); cpu = []\n"
    "for _ in range(int(sys.argv[2])):\n"
    "    t = time.process_time(); load_workflow(sys.argv[1]); cpu.append(time.process_time() - t)\n"
    "print(statistics.median(cpu))"
)
"""A warm ``load_workflow`` in a new process: loaded once, then the median CPU of N loads."""


def warm_child(root: Path, code_dir: Path | None, loads: int) -> float:
    """Median CPU seconds of a warm ``load_workflow`` in a new process, importing the package
    from ``code_dir`` (None: this checkout) and run from a folder holding no other copy."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if code_dir is not None:
        env["PYTHONPATH"] = str(code_dir)
    out = subprocess.run(
        [sys.executable, "-c", WARM_CHILD, str(root), str(loads)],
        capture_output=True, text=True, check=True, env=env, cwd=root.parent,
    )  # fmt: skip
    return float(out.stdout.strip())


def before_clis(root: Path, before: Path, pycache: Path, rounds: int) -> dict[str, list[float]]:
    """The code before issue 15 and ours, alternating: a warm load (CPU, new process each) and a
    fresh ``folpipe validate`` with the parse cache off (CPU), ``rounds`` times."""
    cmd = [sys.executable, "-m", "prefect_folpipe", "validate", str(root)]
    old_env = {**installed_env(pycache), "PYTHONPATH": str(before)}  # run from root.parent
    new_env = installed_env(pycache, FOLPIPE_PARSE_CACHE="0")
    run_child(cmd, old_env, root.parent)  # fills its bytecode cache
    out: dict[str, list[float]] = {"old warm": [], "new warm": [], "old fresh": [], "new fresh": []}
    for _ in range(rounds):
        out["old warm"].append(warm_child(root, before, 3))
        out["new warm"].append(warm_child(root, None, 3))
        out["old fresh"].append(run_child(cmd, old_env, root.parent)[1])
        out["new fresh"].append(run_child(cmd, new_env, root.parent)[1])
    return out


ISSUE_BEFORE_WARM_S = 1.0
"""What the issue measured the code before it at: ``load_workflow`` ~1.0 s in a warm process."""


def print_before(before: dict[str, list[float]], clis: dict[str, list[tuple[float, ...]]]) -> None:
    """The code before issue 15 beside ours, and ours on the issue's machine (scaled by how much
    slower this machine runs the same old code)."""
    med = statistics.median
    old_warm, new_warm = med(before["old warm"]), med(before["new warm"])
    old_fresh, new_fresh = med(before["old fresh"]), med(before["new fresh"])
    scale = old_warm / ISSUE_BEFORE_WARM_S
    print(f"before issue 15: load_workflow warm (CPU, new processes)  {old_warm * 1e3:8.1f}")
    print(f"ours, the same way                                        {new_warm * 1e3:8.1f}")
    print(f"before issue 15: fresh folpipe validate (CPU)             {old_fresh * 1e3:8.1f}")
    print(f"ours, parse cache off, the same rounds (CPU)              {new_fresh * 1e3:8.1f}")
    print(f"this machine runs the old code {scale:.2f}x the issue's 1.0 s; on the issue's machine:")
    print(f"  load_workflow warm {new_warm / scale * 1e3:6.0f} ms (target 300)")
    for key, label in FRESH.items():
        cpu = med([c[2] for c in clis[key]])
        print(f"  {label:34} {cpu / scale * 1e3:6.0f} ms CPU (target 800)")


def issue15(repeat: int, v018: Path | None = None, before: Path | None = None) -> int:
    """Issue 15's tree: load_workflow warm (parsed before in the process: tools.md per stat,
    task.yaml per text, as a second load of an unchanged tree) and first (those caches
    cleared), against the floor; a fresh ``folpipe validate`` process; with ``v018``,
    folpipe 0.1.8 beside each."""
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        root = trees.load_tree(Path(tmp) / "tree")
        count = len(load_workflow(root).tasks())
        assert not validate_workflow(root)

        def first() -> None:
            getattr(toolsmd, "_PARSED", {}).clear()  # older versions: no cache
            getattr(_files, "_PARSED", {}).clear()
            load_workflow(root)

        cases: dict[str, object] = {
            "floor": lambda: floor(root),
            "warm": lambda: load_workflow(root),
            "first": first,
        }
        if v018 is not None:
            load_v018 = v018_loader(v018)
            load_v018(root)  # its modules imported, as ours are
            cases["v018"] = lambda: load_v018(root)
        runs = interleaved(cases, repeat)
        rounds, pycache = max(3, repeat // 2), Path(tmp) / "pycache"
        clis = fresh_clis(root, Path(tmp), rounds)
        if v018 is not None:
            v018_validate(root, v018, pycache)  # fills its bytecode cache
            v018_clis = [v018_validate(root, v018, pycache) for _ in range(rounds)]
        if before is not None:
            before_runs = before_clis(root, before, pycache, rounds)
    print(f"tasks: {count}  (median of {repeat}, interleaved)")
    print("                                         wall ms    cpu ms   cpu / floor")
    floor_cpu = med(runs["floor"][1])
    for key, label in [
        ("floor", "floor: read every file + libyaml"),
        ("warm", "load_workflow, warm"),
        ("first", "load_workflow, first of this tree"),
        *([("v018", "folpipe 0.1.8 TaskLoader().load")] if v018 is not None else []),
    ]:
        wall, cpu = med(runs[key][0]), med(runs[key][1])
        print(f"{label:40} {wall * 1e3:8.1f}  {cpu * 1e3:8.1f}  {cpu / floor_cpu:8.2f}")
    for key, label in FRESH.items():
        validate, _, validate_cpu, _ = (med([c[i] for c in clis[key]]) for i in range(4))
        print(f"{label:40} {validate * 1e3:8.1f}  {validate_cpu * 1e3:8.1f}")
    every = [c for runs_of_case in clis.values() for c in runs_of_case]
    bare, bare_cpu = med([c[1] for c in every]), med([c[3] for c in every])
    print(f"fresh python importing pydantic + yaml   {bare * 1e3:8.1f}  {bare_cpu * 1e3:8.1f}")
    if v018 is not None:
        wall, cpu = med([c[0] for c in v018_clis]), med([c[1] for c in v018_clis])
        label = "fresh folpipe 0.1.8 `agentflow validate`"
        print(f"{label:40} {wall * 1e3:8.1f}  {cpu * 1e3:8.1f}")
        old = med(runs["v018"][1])
        for key in ("warm", "first"):
            print(f"load_workflow {key} / 0.1.8 loader (CPU): {med(runs[key][1]) / old:.2f}")
        for key in FRESH:
            print(f"{FRESH[key]} / 0.1.8's (CPU): {med([c[2] for c in clis[key]]) / cpu:.2f}")
    if before is not None:
        print_before(before_runs, clis)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tree", choices=("issue15", "bench"), default="issue15")
    parser.add_argument("--v018", type=Path, help="folpipe 0.1.8's unpacked sdist, as a baseline")
    parser.add_argument("--before", type=Path, help="a checkout of 8c2b1f7 (before issue 15)")
    args = parser.parse_args()
    if args.tree == "issue15":
        return issue15(args.repeat, args.v018, args.before)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bench"
        count = build(root)
        # first run in this process: imports (pydantic models, tools package) included
        (cold,), (cold_cpu,) = timed(lambda: load_workflow(root), 1)
        workflow = load_workflow(root)
        assert len(workflow.tasks()) == count, (len(workflow.tasks()), count)
        diagnostics = validate_workflow(root)
        assert not diagnostics, diagnostics[:3]
        load_wall, load_cpu = timed(lambda: load_workflow(root), args.repeat)
        val_wall, val_cpu = timed(lambda: validate_workflow(root), args.repeat)
        no_cache = fresh_process(root, None)
        fresh_process(root, Path(tmp) / "pycache")  # fills the bytecode cache
        fresh = fresh_process(root, Path(tmp) / "pycache")
    med = statistics.median
    print(f"tasks: {count}")
    print("                               wall ms    cpu ms")
    print(f"load_workflow, first run      {cold * 1e3:8.1f}  {cold_cpu * 1e3:8.1f}")
    print(
        f"load_workflow, median of {args.repeat}   {med(load_wall) * 1e3:8.1f}  "
        f"{med(load_cpu) * 1e3:8.1f}"
    )
    print(f"validate_workflow, median     {med(val_wall) * 1e3:8.1f}  {med(val_cpu) * 1e3:8.1f}")
    print("fresh process, import + validate (what `folpipe validate` pays):")
    print(f"  with a bytecode cache         {fresh * 1e3:8.1f}")
    print(f"  compiling every module        {no_cache * 1e3:8.1f}")
    worst = max(med(load_wall), med(val_wall))
    verdict = "met" if worst < 1.0 else "MISSED"
    print(f"target < 1000 ms (median wall): {verdict} (worst median {worst * 1e3:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
