"""The hint that guides the model through a plan: :class:`DefaultPlanToHint`.

Before every reasoning step the ReAct agent shows the model one hint, chosen from the current
plan's state. The texts are AgentScope 1.x's, word for word, so a model prompted for one
behaves the same with the other.
"""

from __future__ import annotations

from ._plan_model import Plan

__all__ = ["DefaultPlanToHint"]


class DefaultPlanToHint:
    """The default function to generate the hint message based on the current plan to guide
    the agent on next steps.

    Call it with the current plan (or ``None``). Which text is used:

    1. no plan: :attr:`no_plan`;
    2. no subtask in progress and none done (also when all are abandoned):
       :attr:`at_the_beginning`;
    3. a subtask in progress: :attr:`when_a_subtask_in_progress`, about the last one in
       progress;
    4. every subtask done or abandoned: :attr:`at_the_end`;
    5. otherwise (some done, none in progress): :attr:`when_no_subtask_in_progress`.

    The chosen text is wrapped in :attr:`hint_prefix` and :attr:`hint_suffix`. Change a text
    by subclassing, by assigning the attribute on an instance, or with the keyword arguments.
    Templates use ``{plan}`` (the plan as markdown), and in the in-progress case
    ``{subtask_idx}``, ``{subtask_name}`` and ``{subtask}`` (its detailed markdown); the
    no-subtask-in-progress case has ``{index}`` (the number of done subtasks).
    """

    hint_prefix: str = "<system-hint>"
    hint_suffix: str = "</system-hint>"

    no_plan: str = (
        "If the user's query is complex (e.g. programming a website, game or app), or requires "
        "a long chain of steps to complete (e.g. conduct research on a certain topic from "
        "different sources), you NEED to create a plan first by calling 'create_plan'. "
        "Otherwise, you can directly execute the user's query without planning."
    )

    at_the_beginning: str = (
        "The current plan:\n"
        "```\n"
        "{plan}\n"
        "```\n"
        "Your options include:\n"
        "- Mark the first subtask as 'in_progress' by calling 'update_subtask_state' with "
        "subtask_idx=0 and state='in_progress', and start executing it.\n"
        "- If the first subtask is not executable, analyze why and what you can do to advance "
        "the plan, e.g. ask user for more information, revise the plan by calling "
        "'revise_current_plan'.\n"
        "- If the user asks you to do something unrelated to the plan, prioritize the "
        "completion of user's query first, and then return to the plan afterward.\n"
        "- If the user no longer wants to perform the current plan, confirm with the user and "
        "call the 'finish_plan' function.\n"
    )

    when_a_subtask_in_progress: str = (
        "The current plan:\n"
        "```\n"
        "{plan}\n"
        "```\n"
        "Now the subtask at index {subtask_idx}, named '{subtask_name}', is 'in_progress'. "
        "Its details are as follows:\n"
        "```\n"
        "{subtask}\n"
        "```\n"
        "Your options include:\n"
        "- Go on execute the subtask and get the outcome.\n"
        "- Call 'finish_subtask' with the specific outcome if the subtask is finished.\n"
        "- Ask the user for more information if you need.\n"
        "- Revise the plan by calling 'revise_current_plan' if necessary.\n"
        "- If the user asks you to do something unrelated to the plan, prioritize the "
        "completion of user's query first, and then return to the plan afterward."
    )

    when_no_subtask_in_progress: str = (
        "The current plan:\n"
        "```\n"
        "{plan}\n"
        "```\n"
        "The first {index} subtasks are done, and there is no subtask 'in_progress'. Now Your "
        "options include:\n"
        "- Mark the next subtask as 'in_progress' by calling 'update_subtask_state', and start "
        "executing it.\n"
        "- Ask the user for more information if you need.\n"
        "- Revise the plan by calling 'revise_current_plan' if necessary.\n"
        "- If the user asks you to do something unrelated to the plan, prioritize the "
        "completion of user's query first, and then return to the plan afterward."
    )

    at_the_end: str = (
        "The current plan:\n"
        "```\n"
        "{plan}\n"
        "```\n"
        "All the subtasks are done. Now your options are:\n"
        "- Finish the plan by calling 'finish_plan' with the specific outcome, and summarize "
        "the whole process and outcome to the user.\n"
        "- Revise the plan by calling 'revise_current_plan' if necessary.\n"
        "- If the user asks you to do something unrelated to the plan, prioritize the "
        "completion of user's query first, and then return to the plan afterward."
    )

    def __init__(
        self,
        *,
        hint_prefix: str | None = None,
        hint_suffix: str | None = None,
        no_plan: str | None = None,
        at_the_beginning: str | None = None,
        when_a_subtask_in_progress: str | None = None,
        when_no_subtask_in_progress: str | None = None,
        at_the_end: str | None = None,
    ) -> None:
        """Use the given texts instead of the class's (``None`` keeps the class's).

        :raises TypeError: for a text that is not a string.
        """
        given = {
            "hint_prefix": hint_prefix,
            "hint_suffix": hint_suffix,
            "no_plan": no_plan,
            "at_the_beginning": at_the_beginning,
            "when_a_subtask_in_progress": when_a_subtask_in_progress,
            "when_no_subtask_in_progress": when_no_subtask_in_progress,
            "at_the_end": at_the_end,
        }
        for name, value in given.items():
            if value is None:
                continue
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a string, not {type(value).__name__}")
            setattr(self, name, value)

    def __call__(self, plan: Plan | None) -> str | None:
        """The hint for *plan* (see the class documentation for which text is chosen).

        :returns: the hint wrapped in the prefix and suffix, or ``None`` if the chosen text is
            empty.
        """
        if plan is None:
            hint = self.no_plan
        else:
            n_in_progress = n_done = n_abandoned = 0
            in_progress_idx = -1
            for idx, subtask in enumerate(plan.subtasks):
                state = subtask.state
                if state == "in_progress":
                    n_in_progress += 1
                    in_progress_idx = idx
                elif state == "done":
                    n_done += 1
                elif state == "abandoned":
                    n_abandoned += 1
            if n_in_progress == 0 and n_done == 0:
                hint = self.at_the_beginning.format(plan=plan.to_markdown())
            elif n_in_progress > 0:
                subtask = plan.subtasks[in_progress_idx]
                hint = self.when_a_subtask_in_progress.format(
                    plan=plan.to_markdown(),
                    subtask_idx=in_progress_idx,
                    subtask_name=subtask.name,
                    subtask=subtask.to_markdown(detailed=True),
                )
            elif n_done + n_abandoned == len(plan.subtasks):
                hint = self.at_the_end.format(plan=plan.to_markdown())
            else:
                hint = self.when_no_subtask_in_progress.format(
                    plan=plan.to_markdown(), index=n_done
                )
        if not hint:
            return None
        return f"{self.hint_prefix}{hint}{self.hint_suffix}"
