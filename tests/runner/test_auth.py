"""Bearer tokens (runner.auth): the tokens file format, its refusals and the header check; pure, no Docker."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kcoral.protocol.errors import BadRequest, Unauthorized
from kcoral.runner.auth import LOCAL_OWNER, Authenticator, load_operators, load_tokens

TOKEN = "a" * 16


def tokens_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokens"
    path.write_text(text)
    return path


def test_named_and_bare_tokens_comments_and_blank_lines(tmp_path: Path) -> None:
    bare = "b" * 20
    path = tokens_file(tmp_path, f"# owners\n\nalice {TOKEN}  # her laptop\n   \n{bare}\n#{'c' * 16}\n")
    derived = "t-" + hashlib.sha256(bare.encode()).hexdigest()[:8]
    assert load_tokens(path) == {TOKEN: "alice", bare: derived}
    assert len(derived) == 10


def test_token_length_both_sides(tmp_path: Path) -> None:
    assert load_tokens(tokens_file(tmp_path, "x" * 16)) == {"x" * 16: "t-" + hashlib.sha256(b"x" * 16).hexdigest()[:8]}
    path = tokens_file(tmp_path, f"alice {TOKEN}\nbob {'y' * 15}\n")
    with pytest.raises(BadRequest) as exc:
        load_tokens(path)
    assert exc.value.message == f"{path}:2: tokens must be at least 16 characters"


def test_too_many_words(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, f"\nalice bob {TOKEN}\n")
    with pytest.raises(BadRequest) as exc:
        load_tokens(path)
    assert exc.value.message == f"{path}:2: expected 'NAME TOKEN', 'TOKEN' or 'NAME TOKEN operator'"


def test_operators_are_marked_in_the_tokens_file(tmp_path: Path) -> None:
    lines = [f"alice {TOKEN} operator", "bob " + "b" * 16]
    path = tokens_file(tmp_path, "\n".join(lines) + "\n")
    assert load_tokens(path) == {TOKEN: "alice", "b" * 16: "bob"}
    assert load_operators(path) == {"alice"}
    auth = Authenticator(load_tokens(path), load_operators(path))
    assert auth.is_operator("alice") and not auth.is_operator("bob")
    assert Authenticator(None).is_operator(LOCAL_OWNER)


@pytest.mark.parametrize("text", ["", "\n# only a comment\n  \n"])
def test_a_file_without_tokens_is_refused(tmp_path: Path, text: str) -> None:
    path = tokens_file(tmp_path, text)
    with pytest.raises(BadRequest) as exc:
        load_tokens(path)
    assert exc.value.message == f"tokens file {path} holds no token"


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "missing"
    with pytest.raises(BadRequest) as exc:
        load_tokens(path)
    assert exc.value.message == f"cannot read tokens file {path}: No such file or directory"


def test_the_last_line_of_a_repeated_token_names_it(tmp_path: Path) -> None:
    assert load_tokens(tokens_file(tmp_path, f"alice {TOKEN}\nbob {TOKEN}\n")) == {TOKEN: "bob"}


def test_without_tokens_everyone_is_local() -> None:
    auth = Authenticator(None)
    assert auth.owner(None) == LOCAL_OWNER == "local"
    assert auth.owner("Bearer whatever") == "local"


@pytest.mark.parametrize("header", [None, "", "bearer " + TOKEN, "Basic " + TOKEN, TOKEN, "Bearer" + TOKEN])
def test_missing_or_malformed_header(header: str | None) -> None:
    with pytest.raises(Unauthorized) as exc:
        Authenticator({TOKEN: "alice"}).owner(header)
    assert exc.value.message == "this server needs a bearer token: set KCORAL_TOKEN or pass --token"


@pytest.mark.parametrize("given", ["a" * 15, "a" * 17, "b" * 16, "", "Bearer " + TOKEN])
def test_unknown_token(given: str) -> None:
    with pytest.raises(Unauthorized) as exc:
        Authenticator({TOKEN: "alice", "c" * 16: "carol"}).owner("Bearer " + given)
    assert exc.value.message == "unknown token"


def test_known_tokens_name_their_owner() -> None:
    auth = Authenticator({TOKEN: "alice", "c" * 16: "carol"})
    assert auth.owner("Bearer " + TOKEN) == "alice"
    assert auth.owner("Bearer " + "c" * 16) == "carol"
    assert auth.owner("Bearer  " + TOKEN + " ") == "alice"
