"""The local Ray cluster of the examples that use one (85_evaluate, 86_simulation)."""

from __future__ import annotations

import logging

# Ray logs on every start that token authentication is on (its default, which these examples
# keep): a line with nothing for the reader to do, printed once per run and backend.
_TOKEN_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"


def start_local_ray() -> None:
    """Start a local 2-CPU Ray cluster without its dashboard, its workers' output kept out of
    the example's own. Call it from the main thread (Ray installs signal handlers there), before
    the event loop starts; ``ray.shutdown()`` stops it."""
    import ray

    logging.getLogger(_TOKEN_NOTICE_LOGGER).setLevel(logging.ERROR)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
