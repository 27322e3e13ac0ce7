"""Sessions: save the state of agents, memories and toolkits, and load it back later.

:class:`SessionBase` is AgentScope's interface (``save_session_state(session_id, user_id,
**modules)`` / ``load_session_state(...)``); :class:`JSONSession` keeps one JSON file per
session in AgentScope's naming and layout, :class:`SQLiteSession` keeps every session of an
application in one SQLite file, and :class:`RedisSession` keeps them in Redis with AgentScope's
keys. Every save is atomic and every load is all or nothing (see :class:`SessionBase`).
"""

from ._json_session import JSONSession
from ._redis_session import RedisSession
from ._session_base import SessionBase
from ._sqlite_session import SQLiteSession

__all__ = ["JSONSession", "RedisSession", "SQLiteSession", "SessionBase"]
