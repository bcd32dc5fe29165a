from __future__ import annotations

import pytest

from usebench.errors import BenchError
from usebench.registry import Registry, UnknownNameError


def test_register_get_and_names():
    reg: Registry[int] = Registry("thing")
    reg.register("alpha")(1)
    reg.add("beta", 2)
    assert reg.get("alpha") == 1 and reg.names() == ["alpha", "beta"] and "beta" in reg and len(reg) == 2


def test_duplicate_name_is_an_error():
    reg: Registry[int] = Registry("thing")
    reg.add("alpha", 1)
    with pytest.raises(BenchError, match="registered twice"):
        reg.add("alpha", 2)


def test_unknown_name_suggests_close_matches():
    reg: Registry[int] = Registry("task")
    reg.add("askubuntu", 1)
    reg.add("twitterpara", 2)
    with pytest.raises(UnknownNameError, match="did you mean 'askubuntu'"):
        reg.get("askubunt")


def test_wrapper_names_exist_whatever_the_registration_order():
    reg: Registry[str] = Registry("task")
    reg.add("rank-a", "A")
    reg.add_wrapper("x+", lambda obj: f"wrapped {obj}" if obj.isupper() else None)
    reg.add("rank-b", "B")  # enrolled after the wrapper: still wrapped
    reg.add("pairs", "p")  # the builder declines it
    assert reg.names() == ["pairs", "rank-a", "rank-b", "x+rank-a", "x+rank-b"]
    assert reg.get("x+rank-b") == "wrapped B" and reg.get("x+rank-b") is reg.get("x+rank-b")
    assert "x+pairs" not in reg and "x+x+rank-a" not in reg
    with pytest.raises(UnknownNameError, match="did you mean 'x\\+rank-b'"):
        reg.get("x+rank-c")
    with pytest.raises(BenchError, match="registered twice"):
        reg.add("x+other", "O")  # a plain name may not shadow a wrapper family


def test_resolver_names_are_built_once_and_unknown_ones_use_the_resolvers_message():
    calls: list[str] = []

    def resolve(rest: str) -> int:
        calls.append(rest)
        if rest not in ("one", "two"):
            raise UnknownNameError(f"no {rest!r} out there; did you mean 'one'?")
        return {"one": 1, "two": 2}[rest]

    reg: Registry[int] = Registry("task")
    reg.add("local", 0)
    reg.add_resolver("ext:", resolve)
    assert reg.get("ext:one") == 1 and reg.get("ext:one") == 1 and calls == ["one"]
    assert "ext:two" in reg and "ext:three" not in reg
    with pytest.raises(UnknownNameError, match="did you mean 'one'"):
        reg.get("ext:three")
    assert reg.names() == ["local"]  # resolver names are not listed
    with pytest.raises(BenchError, match="registered twice"):
        reg.add("ext:zero", 0)
    with pytest.raises(BenchError, match="registered twice"):
        reg.add_resolver("ext:", resolve)
