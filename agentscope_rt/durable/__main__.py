"""``python -m agentscope_rt.durable``: see :mod:`agentscope_rt.durable._cli`."""

import sys

from ._cli import main

sys.exit(main())
