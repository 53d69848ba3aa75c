"""Tool signatures read from the source, without running it (what ``folpipe validate`` does).

``folpipe validate`` must be safe on a folder nobody has reviewed yet (a pull request in CI),
so it never executes tools.md code blocks or ``tools/*.py``. It reads them with :mod:`ast`:

* the functions defined at the top level of the block or module, ``@tool`` / ``@tool(...)``
  decorators with literal arguments (``name``, ``description``, ``retries``, ``timeout``,
  ``scope``), parameters, defaults (literals) and docstrings;
* type hints made of builtins and ``typing`` names (``str``, ``int``, ``list[str]``,
  ``dict[str, int]``, ``Optional``, ``X | None``, ``Literal[...]``, ``Any``); a hint naming
  anything else (your pydantic model, an enum, an import) accepts any value in this reading;
* top-level imports: a module that cannot be found (``find_spec``, which locates without
  importing) is the same FP214 / FP219 an import would give;
* code that would end the process when loaded (``raise SystemExit``, ``sys.exit()``,
  ``os._exit()`` outside a function) is FP214 / FP219 as well.

``folpipe run`` (and ``folpipe validate --import-tools``) imports the code instead, and the
model is sent the schema of the real function.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...authoring import (
    UNKNOWN_DEFAULT,
    Param,
    ToolDefinitionError,
    ToolMeta,
    keyword_only_error,
    parameters_schema,
    parse_docstring,
    tool,
)
from ...authoring.agentflow import MODULES as AGENTFLOW_MODULES
from ...authoring.agentflow import ROOT as AGENTFLOW

CONTEXT_TYPES = frozenset({"ToolContext", "HookContext"})
_NAMES: dict[str, Any] = {
    "str": str, "int": int, "float": float, "bool": bool, "bytes": bytes, "list": list,
    "dict": dict, "tuple": tuple, "set": set, "frozenset": frozenset, "object": object,
    "None": None, "Any": Any, "Optional": typing.Optional, "Union": typing.Union,
    "Literal": typing.Literal, "List": list, "Dict": dict, "Tuple": tuple, "Set": set,
    "FrozenSet": frozenset, "Sequence": list, "MutableSequence": list, "Iterable": list,
    "Collection": list, "Mapping": dict, "MutableMapping": dict, "Annotated": typing.Annotated,
}  # fmt: skip
"""Type names understood without importing anything (others read as ``Any``)."""


class StaticProblem(Exception):
    """Something the source shows is wrong: ``message`` (as an import would say it), ``line``;
    ``module``: the module that cannot be found, if that is the problem."""

    def __init__(self, message: str, line: int | None, module: str | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.module = module


@dataclass
class StaticFunction:
    """A top-level function as the source declares it."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    meta: ToolMeta | None = None
    decorated: bool = False

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def line(self) -> int:
        return self.node.lineno


@dataclass
class StaticModule:
    functions: dict[str, StaticFunction] = field(default_factory=dict)


def read_source(
    code: str, source_file: str, *, line: int = 1, tools_dir: Path | None = None
) -> StaticModule:
    """Parse ``code`` (starting at ``line`` of ``source_file``) and check its imports; raise
    ``SyntaxError`` or :class:`StaticProblem`."""
    tree = ast.parse("\n" * (line - 1) + code, source_file)
    _check_imports(tree, tools_dir)
    _check_exits(tree)
    module = StaticModule()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            decorated, meta = _tool_decorator(node)
            module.functions[node.name] = StaticFunction(node, meta, decorated)
    return module


def _check_imports(tree: ast.Module, tools_dir: Path | None) -> None:
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                _find(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                _find(node.module, node.lineno)
            elif node.level:
                _find_relative(node, tools_dir)


EXIT_CALLS = frozenset({"exit", "quit", "_exit", "abort"})


def _check_exits(tree: ast.Module) -> None:
    """Code that would end the process when the module loads (``raise SystemExit``,
    ``sys.exit()``, ``os._exit()``, ``exit()``), outside any function or class."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Raise) and _names_system_exit(node.exc):
            raise StaticProblem("SystemExit: the code raises SystemExit when loaded", node.lineno)
        if isinstance(node, ast.Call):
            func = node.func
            name = getattr(func, "id", None) or getattr(func, "attr", None)
            if name in EXIT_CALLS:
                raise StaticProblem(
                    f"SystemExit: the code calls {ast.unparse(func)}() when loaded", node.lineno
                )
        stack.extend(ast.iter_child_nodes(node))


def _names_system_exit(node: ast.expr | None) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return getattr(target, "id", None) == "SystemExit" or getattr(target, "attr", None) == (
        "SystemExit"
    )


_LOOKUPS: ContextVar[list[tuple[str, bool]] | None] = ContextVar("folpipe_lookups", default=None)


@contextmanager
def recorded_lookups() -> Iterator[list[tuple[str, bool]]]:
    """Collect ``(module, found)`` for every module looked up inside the block: what a
    static reading depends on besides the source (``loader.parsecache``)."""
    made: list[tuple[str, bool]] = []
    token = _LOOKUPS.set(made)
    try:
        yield made
    finally:
        _LOOKUPS.reset(token)


def module_found(name: str) -> bool:
    """Whether the top-level module ``name`` can be imported here (located, not imported)."""
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    made = _LOOKUPS.get()
    if made is not None:
        made.append((name, found))
    return found


def _find(module: str, line: int) -> None:
    top = module.split(".")[0]
    found = module_found(top)
    if top == AGENTFLOW and not found:  # folpipe 0.1.8's modules, answered while loading
        if module in AGENTFLOW_MODULES:
            return
        top = module
    if not found:
        raise StaticProblem(f"ModuleNotFoundError: No module named {top!r}", line, top)


def _find_relative(node: ast.ImportFrom, tools_dir: Path | None) -> None:
    if tools_dir is None or node.level > 1:
        raise StaticProblem(
            "ImportError: attempted relative import beyond top-level package", node.lineno
        )
    names = [node.module] if node.module else [alias.name for alias in node.names]
    for name in names:
        base = tools_dir / name.split(".")[0]
        if not (base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()):
            raise StaticProblem(f"ModuleNotFoundError: No module named {name!r}", node.lineno)


def _tool_decorator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[bool, ToolMeta | None]:
    """Whether ``node`` is decorated with ``@tool`` and the options it gives."""
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        if not _is_tool_name(target):
            continue
        options: dict[str, Any] = {}
        positional = list(call.args) if call is not None else []
        if len(positional) > len(POSITIONAL_OPTIONS):
            raise StaticProblem("tool() takes at most 3 positional arguments", decorator.lineno)
        for name, value in zip(POSITIONAL_OPTIONS, positional, strict=False):
            options[name] = _literal(value, name, decorator.lineno)  # folpipe 0.1.8's @tool("x")
        for keyword in call.keywords if call is not None else ():
            options[str(keyword.arg)] = _literal(keyword.value, str(keyword.arg), decorator.lineno)
        try:
            marked = tool(**options)(lambda: None)
        except (TypeError, ValueError) as exc:
            raise StaticProblem(f"{type(exc).__name__}: {exc}", decorator.lineno) from None
        meta: ToolMeta = marked.__folpipe_tool__  # type: ignore[attr-defined]
        name = options.get("name") or node.name
        return True, dataclasses.replace(meta, name=name)
    return False, None


POSITIONAL_OPTIONS = ("name", "description", "scope")
"""``@tool("name", "description", "scope")``: folpipe 0.1.8's ``agentflow.tool``."""


def _literal(node: ast.expr, option: str, line: int) -> Any:
    try:
        return _literal_value(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise StaticProblem(
            f"@tool({option}=...) must be a literal to be read without running the code "
            "(or validate with --import-tools)",
            line,
        ) from None


def _literal_value(node: ast.expr) -> Any:
    """``ast.literal_eval`` with constants and their lists, tuples, sets and dicts read
    directly: those are nearly every default and option, and ``literal_eval`` leaves a cycle
    of closures behind on every call (garbage only the collector frees)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return _CONTAINERS[type(node)](_literal_value(item) for item in node.elts)
    if isinstance(node, ast.Dict) and None not in node.keys:
        pairs = zip(node.keys, node.values, strict=True)
        return {_literal_value(key): _literal_value(value) for key, value in pairs}  # type: ignore[arg-type]
    return ast.literal_eval(node)


_CONTAINERS: dict[type[ast.expr], type] = {ast.List: list, ast.Tuple: tuple, ast.Set: set}


def _is_tool_name(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "tool") or (
        isinstance(node, ast.Attribute) and node.attr == "tool"
    )


def static_schema(
    function: StaticFunction, descriptions: dict[str, str] | None = None
) -> tuple[dict[str, Any], str]:
    """The JSON Schema of a function's arguments as its source declares them, and its
    description (the decorator's, else the docstring's summary)."""
    node = function.node
    args = node.args
    if args.posonlyargs or args.vararg:
        name = (args.posonlyargs[0] if args.posonlyargs else args.vararg).arg  # type: ignore[union-attr]
        raise keyword_only_error(name, node.name)
    positional = list(args.args)
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    pairs = list(zip(positional, defaults, strict=True))
    pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    if pairs and _is_context(pairs[0][0]):
        pairs = pairs[1:]
    params = [
        Param(arg.arg, annotation_type(arg.annotation), _default(default)) for arg, default in pairs
    ]
    doc = parse_docstring(ast.get_docstring(node))
    schema = parameters_schema(
        node.name, params, doc, descriptions, accepts_extra=args.kwarg is not None
    )
    meta = function.meta
    return schema, (meta.description if meta and meta.description else doc.summary) or ""


def _is_context(arg: ast.arg) -> bool:
    if arg.arg == "ctx":
        return True
    annotation = arg.annotation
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value in CONTEXT_TYPES
    name = getattr(annotation, "id", None) or getattr(annotation, "attr", None)
    return name in CONTEXT_TYPES


def _default(node: ast.expr | None) -> Any:
    if node is None:
        return ...
    try:
        return _literal_value(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN_DEFAULT


def annotation_type(node: ast.expr | None, depth: int = 0) -> Any:
    """A type hint from its source, using builtins and ``typing`` names only (else ``Any``)."""
    if node is None or depth > 20:
        return Any
    try:
        return _annotation(node, depth)
    except Exception:  # anything unusual reads as "any value"
        return Any


def _annotation(node: ast.expr, depth: int) -> Any:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return None
        if isinstance(node.value, str):  # a string annotation
            return annotation_type(ast.parse(node.value, mode="eval").body, depth + 1)
        return Any
    if isinstance(node, ast.Name | ast.Attribute):
        name = node.id if isinstance(node, ast.Name) else node.attr
        return _NAMES.get(name, Any)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = annotation_type(node.left, depth + 1), annotation_type(node.right, depth + 1)
        return typing.Union[left, right]  # noqa: UP007 - built at run time from parts
    if isinstance(node, ast.Subscript):
        return _subscript(node, depth)
    return Any


def _subscript(node: ast.Subscript, depth: int) -> Any:
    base = annotation_type(node.value, depth + 1)
    items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if base is typing.Literal:
        return typing.Literal[tuple(_literal_value(item) for item in items)]
    if base is typing.Annotated:
        return annotation_type(items[0], depth + 1)
    args = tuple(annotation_type(item, depth + 1) for item in items)
    if base is Any:
        return Any
    return base[args if len(args) > 1 else args[0]]


def pick_static_function(
    module: StaticModule, wanted: str, tool_name: str, explicit: bool
) -> StaticFunction | None:
    """The function a tools.md code block implements its tool with (as ``_pick_function``)."""
    functions = module.functions
    if wanted in functions:
        return functions[wanted]
    marked = [f for f in functions.values() if f.meta is not None and f.meta.name == tool_name]
    public = [f for name, f in functions.items() if not name.startswith("_")]
    choice = marked or public
    if len(choice) == 1 and not explicit:
        return choice[0]
    return None


def decorated_functions(module: StaticModule) -> Iterator[StaticFunction]:
    """The ``@tool`` functions of a ``tools/*.py`` module, in source order."""
    return (f for f in module.functions.values() if f.decorated)


__all__ = [
    "StaticFunction",
    "StaticModule",
    "StaticProblem",
    "ToolDefinitionError",
    "annotation_type",
    "decorated_functions",
    "pick_static_function",
    "read_source",
    "static_schema",
]
