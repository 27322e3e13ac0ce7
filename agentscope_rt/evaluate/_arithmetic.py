"""A small benchmark shipped with the package: arithmetic questions a tool-using agent answers.

Thirty-six deterministic tasks (no download, no randomness): each asks for the value of an
integer expression; the ground truth is that value. Two metrics: ``correct`` (a category,
``"correct"`` or ``"incorrect"``) compares the solution's output with the ground truth as a
number, and ``abs_error`` (numerical) is the absolute difference (the ground truth itself when
the output is not a number).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from typing import Any

from ..exception import EvaluationError
from ._metric import MetricBase, MetricResult, MetricType
from ._solution import SolutionOutput
from ._task import BenchmarkBase, Task

# (expression, difficulty): every value is an integer.
_QUESTIONS: tuple[tuple[str, str], ...] = (
    ("2 + 3", "easy"),
    ("17 - 9", "easy"),
    ("6 * 7", "easy"),
    ("81 // 9", "easy"),
    ("15 + 27", "easy"),
    ("100 - 58", "easy"),
    ("12 * 12", "easy"),
    ("144 // 12", "easy"),
    ("9 * 8", "easy"),
    ("250 + 750", "easy"),
    ("1000 - 1", "easy"),
    ("7 * 6 + 1", "easy"),
    ("(3 + 4) * 5", "medium"),
    ("128 // 4 - 7", "medium"),
    ("23 * 19", "medium"),
    ("999 + 1001", "medium"),
    ("(50 - 8) * 3", "medium"),
    ("17 * 23 - 1", "medium"),
    ("2 ** 10", "medium"),
    ("365 * 24", "medium"),
    ("(120 + 30) // 6", "medium"),
    ("48 * 52", "medium"),
    ("7 ** 3 - 43", "medium"),
    ("(81 - 17) * (4 + 5)", "medium"),
    ("123 * 456", "hard"),
    ("(2 ** 16) - 1", "hard"),
    ("987 * 654 - 321", "hard"),
    ("(1234 + 5678) * 3", "hard"),
    ("99999 // 7", "hard"),
    ("3 ** 12 - 2 ** 12", "hard"),
    ("(45 * 45) - (44 * 46)", "hard"),
    ("31 * 37 * 41", "hard"),
    ("(10 ** 6) // 64", "hard"),
    ("(17 - 5) * (23 + 19) - 100", "hard"),
    ("2 ** 20 - 3 ** 12", "hard"),
    ("(7 * 11 * 13) * 2 - 1", "hard"),
)

_OPERATORS: dict[type[ast.AST], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
}
_MAX_EXPONENT = 64


def evaluate_expression(expression: str) -> int:
    """The value of an integer expression of ``+ - * // % **`` and parentheses.

    :raises ValueError: for anything else (names, calls, floats, exponents above 64,
        division by zero), with what was refused.
    """

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and not 0 <= right <= _MAX_EXPONENT:
                raise ValueError(f"exponent {right} is outside 0..{_MAX_EXPONENT}")
            if isinstance(node.op, ast.FloorDiv | ast.Mod) and right == 0:
                raise ValueError("division by zero")
            result: int = _OPERATORS[type(node.op)](left, right)
            return result
        raise ValueError(f"unsupported in an arithmetic expression: {ast.dump(node)[:80]}")

    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an expression: {expression!r}") from exc
    return walk(tree)


def _as_number(output: Any) -> float | None:
    if isinstance(output, bool):
        return None
    if isinstance(output, int | float):
        return float(output)
    if isinstance(output, str):
        try:
            return float(output.strip().replace(",", ""))
        except ValueError:
            return None
    return None


class ExactAnswer(MetricBase):
    """``"correct"`` when the solution's output equals the ground truth as a number.

    :param ground_truth: the expected value.
    """

    def __init__(self, ground_truth: int) -> None:
        super().__init__(
            "correct",
            MetricType.CATEGORY,
            "the output equals the expected value",
            ["correct", "incorrect"],
        )
        self.ground_truth = ground_truth

    async def __call__(self, solution: SolutionOutput) -> MetricResult:
        """Compare ``solution.output`` with the ground truth."""
        value = _as_number(solution.output)
        ok = solution.success and value is not None and value == self.ground_truth
        return MetricResult(
            name=self.name,
            result="correct" if ok else "incorrect",
            message=f"expected {self.ground_truth}, got {solution.output!r}",
        )


class AbsoluteError(MetricBase):
    """How far the solution's output is from the ground truth.

    :param ground_truth: the expected value.
    """

    def __init__(self, ground_truth: int) -> None:
        super().__init__("abs_error", MetricType.NUMERICAL, "|output - expected|")
        self.ground_truth = ground_truth

    async def __call__(self, solution: SolutionOutput) -> MetricResult:
        """``abs(output - ground_truth)``; the ground truth's size when there is no number."""
        value = _as_number(solution.output)
        error = abs(self.ground_truth) if value is None else abs(value - self.ground_truth)
        return MetricResult(name=self.name, result=float(error))


class ArithmeticBenchmark(BenchmarkBase):
    """Thirty-six arithmetic questions (twelve each easy, medium and hard).

    Task ``i`` has id ``arith-{i:02d}``, input ``{"question": ..., "expression": ...}``,
    tag ``difficulty``, and the metrics :class:`ExactAnswer` and :class:`AbsoluteError`.

    :param size: use only the first *size* tasks, or cycle through them to make *size* tasks
        (ids go on counting); default 36.
    :raises EvaluationError: for a size below 1.
    """

    def __init__(self, size: int = len(_QUESTIONS)) -> None:
        if not isinstance(size, int) or size < 1:
            raise EvaluationError(f"size must be an int >= 1, not {size!r}")
        super().__init__(
            "arithmetic", "integer arithmetic questions answered with a calculator tool"
        )
        self._tasks = [self._task(i) for i in range(size)]

    @staticmethod
    def _task(index: int) -> Task:
        expression, difficulty = _QUESTIONS[index % len(_QUESTIONS)]
        value = evaluate_expression(expression)
        return Task(
            id=f"arith-{index:02d}",
            input={"question": f"What is {expression}?", "expression": expression},
            ground_truth=value,
            metrics=[ExactAnswer(value), AbsoluteError(value)],
            tags={"difficulty": difficulty},
        )

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    def __getitem__(self, index: int) -> Task:
        return self._tasks[index]
