"""Port of AgentScope's plan example (``examples/functionality/plan``).

A ReAct agent with ``enable_meta_tool=True`` and a ``PlanNotebook``: the plan tools sit in the
inactive group ``plan_related`` until the model equips them with ``reset_equipped_tools``; an
MCP server's tools are registered in a group of their own (the original uses a browser MCP
server through ``npx``; the port runs the project's demo MCP server over stdio). The model
creates a two-subtask plan, works through it and finishes it; a hint about the plan precedes
every reasoning step and never stays in memory.
"""

from __future__ import annotations

import sys

from agentscope_rt.agent import ReActAgent, UserAgent
from agentscope_rt.formatter import DashScopeChatFormatter
from agentscope_rt.mcp import StdIOStatefulClient
from agentscope_rt.model import reply, tool_call
from agentscope_rt.plan import PlanNotebook
from agentscope_rt.tool import (
    Toolkit,
    execute_python_code,
    execute_shell_command,
    insert_text_file,
    view_text_file,
    write_text_file,
)

from ..mcp.helpers import SERVER_SCRIPT
from ._support import ScriptedUserInput, cloud_model

SUBTASKS = [
    {"name": "Add", "description": "Add 2 and 3 with the add tool.", "expected_outcome": "5"},
    {"name": "Report", "description": "Tell the user the sum.", "expected_outcome": "A reply"},
]

SCRIPT = [
    reply(tool_call("reset_equipped_tools", {"plan_related": True, "demo_tools": True})),
    reply(
        tool_call(
            "create_plan",
            {
                "name": "Sum",
                "description": "Compute 2 + 3 and report it.",
                "expected_outcome": "The user knows the sum.",
                "subtasks": SUBTASKS,
            },
        )
    ),
    reply(tool_call("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"})),
    reply(tool_call("add", {"a": 2, "b": 3})),
    reply(tool_call("finish_subtask", {"subtask_idx": 0, "subtask_outcome": "2 + 3 = 5"})),
    reply(tool_call("finish_subtask", {"subtask_idx": 1, "subtask_outcome": "Reported 5"})),
    reply(tool_call("finish_plan", {"state": "done", "outcome": "The sum is 5."})),
    "2 + 3 is 5.",
]


async def main() -> tuple[ReActAgent, PlanNotebook]:
    toolkit = Toolkit()
    toolkit.register_tool_function(execute_shell_command)
    toolkit.register_tool_function(execute_python_code)
    toolkit.register_tool_function(write_text_file)
    toolkit.register_tool_function(insert_text_file)
    toolkit.register_tool_function(view_text_file)

    mcp = StdIOStatefulClient(
        name="demo_tools", command=sys.executable, args=[str(SERVER_SCRIPT), "stdio"]
    )
    await mcp.connect()

    # Enable the meta tool
    toolkit.create_tool_group(group_name=mcp.name, description="Tools for arithmetic")
    await toolkit.register_mcp_client(mcp, group_name=mcp.name, enable_funcs=["add"])

    plan_notebook = PlanNotebook()
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You're a helpful assistant named Friday.\n\n# Target\nYour target is to "
        "finish the given task with careful planning.",
        model=cloud_model(*SCRIPT, stream=False),
        formatter=DashScopeChatFormatter(),
        toolkit=toolkit,
        enable_meta_tool=True,
        plan_notebook=plan_notebook,
    )
    agent.set_console_output_enabled(False)
    user = UserAgent(name="User")
    user.set_console_output_enabled(False)
    user.override_instance_input_method(ScriptedUserInput(["What is 2 + 3? Plan it.", "exit"]))

    try:
        msg = None
        while True:
            msg = await user(msg)
            if msg.get_text_content() == "exit":
                break
            msg = await agent(msg)
    finally:
        await mcp.close()
    return agent, plan_notebook


async def test_the_plan_example_creates_works_through_and_finishes_a_plan() -> None:
    agent, notebook = await main()

    calls = agent.model.calls
    # Before equipping, only the basic tools and the meta tool are offered.
    assert "create_plan" not in calls[0].tool_names
    assert "reset_equipped_tools" in calls[0].tool_names
    assert {"create_plan", "finish_plan", "add"} <= set(calls[1].tool_names)
    # Each reasoning step ends its prompt with the plan hint of the moment.
    hints = [str(call.messages[-1]["content"]) for call in calls]
    assert all("<system-hint>" in hint for hint in hints)
    assert "create_plan" in hints[0]  # no plan yet
    assert "subtask_idx" in hints[2] or "update_subtask_state" in hints[2]  # plan just created
    assert "Add" in hints[3]  # working on the first subtask
    # The plan ended done, went to storage, and no hint stayed in memory.
    assert notebook.current_plan is None
    stored = await notebook.storage.get_plans()
    assert [(p.name, p.state) for p in stored] == [("Sum", "done")]
    assert [s.state for s in stored[0].subtasks] == ["done", "done"]
    memory = await agent.memory.get_memory()
    assert not any("<system-hint>" in str(m.content) for m in memory)
    assert memory[-1].get_text_content() == "2 + 3 is 5."
