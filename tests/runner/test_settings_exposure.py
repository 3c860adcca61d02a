"""--host-toolchain mounts host folders into every job: the server refuses to start when its tokens
file or data dir lies inside one of them (a job could read them)."""

from __future__ import annotations

from pathlib import Path

from kcoral.runner.settings import DEFAULT_TOOLCHAIN_MOUNTS, Settings


def test_a_tokens_file_or_data_dir_inside_a_mount_is_named(tmp_path: Path) -> None:
    mounted = tmp_path / "etc"
    (mounted / "kcoral").mkdir(parents=True)
    tokens = mounted / "kcoral" / "tokens"
    tokens.write_text("x" * 20)
    settings = Settings(toolchain_mounts=(str(mounted),), tokens_file=tokens, data_dir=mounted / "data")
    assert settings.exposed_secrets() == [
        f"the tokens file {tokens.resolve()} is inside {mounted.resolve()}, which every job gets read-only",
        f"the data dir {(mounted / 'data').resolve()} is inside {mounted.resolve()}, which every job gets read-only",
    ]


def test_a_link_does_not_hide_it(tmp_path: Path) -> None:
    mounted = tmp_path / "opt"
    mounted.mkdir()
    (tmp_path / "elsewhere").symlink_to(mounted)
    settings = Settings(toolchain_mounts=(str(mounted),), data_dir=tmp_path / "elsewhere" / "data")
    assert len(settings.exposed_secrets()) == 1


def test_outside_the_mounts_or_without_them_nothing_is_exposed(tmp_path: Path) -> None:
    assert Settings(toolchain_mounts=DEFAULT_TOOLCHAIN_MOUNTS, data_dir=tmp_path / "data").exposed_secrets() == []
    assert Settings(toolchain_mounts=(), data_dir=Path("/etc/kcoral-data")).exposed_secrets() == []
    assert Settings(toolchain_mounts=DEFAULT_TOOLCHAIN_MOUNTS, data_dir=Path("/etc/kcoral-data")).exposed_secrets()
