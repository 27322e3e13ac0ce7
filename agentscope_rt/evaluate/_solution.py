"""What a solution returns for one task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..exception import EvaluationError, MessageFormatError
from ..message import TextBlock, ToolResultBlock, ToolUseBlock
from ..message.serde import check_json, structure_block, unstructure_block

TrajectoryItem = ToolUseBlock | ToolResultBlock | TextBlock


@dataclass
class SolutionOutput:
    """The output of a solution for one task (AgentScope's ``SolutionOutput``).

    Stored as ``solution.json`` in AgentScope's JSON form (:meth:`to_dict`); the trajectory's
    blocks are saved as AgentScope's block dicts and read back as blocks.
    """

    success: bool
    """Whether the solution ran to the end (``False`` when it gave up)."""
    output: Any
    """The final output, JSON data."""
    trajectory: list[TrajectoryItem] = field(default_factory=list)
    """The tool calls, tool results and texts on the way (blocks or their dicts)."""
    meta: dict[str, Any] | None = None
    """Optional JSON data about the run."""

    def to_dict(self) -> dict[str, Any]:
        """The output as AgentScope stores it.

        :raises MessageFormatError: when ``output``, ``meta`` or a trajectory item is not JSON
            data (the message names the path).
        """
        trajectory = [
            item if isinstance(item, dict) else unstructure_block(item) for item in self.trajectory
        ]
        data = {
            "success": self.success,
            "output": self.output,
            "trajectory": trajectory,
            "meta": self.meta,
        }
        check_json(data)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> SolutionOutput:
        """Build an output from its stored form (AgentScope's or ours).

        :raises EvaluationError: when *data* is not a dict with ``success``, ``output`` and
            ``trajectory``, or a trajectory item is not a content block.
        """
        if not isinstance(data, dict) or not {"success", "output", "trajectory"} <= data.keys():
            raise EvaluationError(
                f"a solution output needs 'success', 'output' and 'trajectory', got {data!r:.200}"
            )
        if not isinstance(data["trajectory"], list):
            raise EvaluationError("a solution output's 'trajectory' must be a list")
        try:
            trajectory = [
                structure_block(item, path=f"trajectory[{i}]")
                for i, item in enumerate(data["trajectory"])
            ]
        except MessageFormatError as exc:
            raise EvaluationError(f"a solution output's trajectory is malformed: {exc}") from exc
        return cls(
            success=bool(data["success"]),
            output=data["output"],
            trajectory=trajectory,  # type: ignore[arg-type]
            meta=data.get("meta"),
        )

    def __getitem__(self, key: str) -> Any:
        # AgentScope's outputs are dicts too: output["output"] keeps working.
        if key not in ("success", "output", "trajectory", "meta"):
            raise KeyError(key)
        return getattr(self, key)
