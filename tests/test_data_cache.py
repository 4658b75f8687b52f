"""Where the clkit data cache lives: never inside an installed package."""

from pathlib import Path

from clkit.data import _cache


def test_env_variable_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("CLKIT_DATA", str(tmp_path / "d"))
    assert _cache.data_root() == tmp_path / "d"


def test_source_checkout_uses_data_cache(monkeypatch, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / "data").mkdir()
    monkeypatch.delenv("CLKIT_DATA", raising=False)
    monkeypatch.setattr(_cache, "repo_root", lambda: tmp_path)
    assert _cache.data_root() == tmp_path / "data" / "cache"


def test_installed_package_uses_user_cache(monkeypatch, tmp_path):
    site = tmp_path / "site-packages"        # an installed clkit: no pyproject.toml beside it
    site.mkdir()
    monkeypatch.delenv("CLKIT_DATA", raising=False)
    monkeypatch.setattr(_cache, "repo_root", lambda: site)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = _cache.data_root(create=True)
    assert root == tmp_path / "xdg" / "clkit" and root.is_dir()
    assert site not in root.parents
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _cache.data_root() == Path.home() / ".cache" / "clkit"
