"""The repository's top level and the package's: only what the design card
names (issue 36 item 5), at most five top-level modules in hloprobe/
(item 6: the rest live in packages), and the source layout in
CONTRIBUTING.md, not in the README (item 7: the README is for users).

The repository's entries are read from `git ls-files` (what is committed
or staged), so ignored build outputs (.venv*, build/, out/) and a
developer's untracked files do not fail it. A test that writes output
must write it under a temp folder (absltest's `create_tempdir`), never
into the checkout. The stray `all/` folder of Model Explorer outputs
(commit bf1d707) came from no test of that commit's history (none then
swept `conv_only` or passed --model_explorer); most likely a hand-run
sweep with `--model_explorer=all`, committed with the code.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import testutil
from absl.testing import absltest

# The design card's top level, plus CONTRIBUTING.md.
_ALLOWED = {
  "pyproject.toml",
  "hloprobe",
  "tests",
  "golden",
  "README.md",
  "Makefile",
  "CONTRIBUTING.md",
}
# The usual dotfiles: git's and CI's.
_DOTFILES = {".gitignore", ".gitattributes", ".ci", ".github"}
_MAX_TOP_MODULES = 5


def top_level_problems(names: set[str]) -> list[str]:
  """The entries of `names` (a repository's top level) the card does not
  allow, one line each, sorted."""
  return [
    f"{n}: not allowed at the repository's top level"
    for n in sorted(names - _ALLOWED - _DOTFILES)
  ]


class TopLevelTest(absltest.TestCase):
  @absltest.skipIf(
    shutil.which("git") is None
    or not os.path.exists(os.path.join(testutil.ROOT, ".git")),
    "not a git checkout: `git ls-files` cannot say what is committed",
  )
  def test_repository_holds_only_the_card(self):
    listed = subprocess.run(
      ["git", "ls-files", "-z"],
      cwd=testutil.ROOT,
      capture_output=True,
      check=True,
      text=True,
    ).stdout
    names = {p.split("/")[0] for p in listed.split("\0") if p}
    self.assertEqual(top_level_problems(names), [])
    self.assertLessEqual(_ALLOWED - {"CONTRIBUTING.md"}, names)

  def test_a_stray_folder_fails(self):
    names = _ALLOWED | {".gitignore", "all", "scratch.txt"}
    self.assertEqual(
      top_level_problems(names),
      [
        "all: not allowed at the repository's top level",
        "scratch.txt: not allowed at the repository's top level",
      ],
    )

  def test_package_has_at_most_five_top_level_modules(self):
    package = os.path.join(testutil.ROOT, "hloprobe")
    modules = sorted(n for n in os.listdir(package) if n.endswith(".py"))
    self.assertLessEqual(len(modules), _MAX_TOP_MODULES, modules)


def _read(name: str) -> str:
  with open(os.path.join(testutil.ROOT, name), encoding="utf-8") as f:
    return f.read()


def layout_problems(readme: str, contributing: str, packages) -> list[str]:
  """What is wrong with where the source layout is documented: a README
  heading or code block of the package tree, or a package of `packages`
  CONTRIBUTING.md's "Source layout" does not name (as `name/`)."""
  out = []
  for heading in re.findall(r"^#+ .*$", readme, re.M):
    words = heading.lstrip("#").strip().lower()
    if re.fullmatch(r"(source |package )?layout|development", words):
      out.append(f"README.md: {heading!r} is for CONTRIBUTING.md")
  if re.search(r"^```\n\s*hloprobe/\n", readme, re.M):
    out.append("README.md: a source tree of hloprobe/")
  part = contributing.partition("## Source layout")[2].partition("\n## ")[0]
  if not part:
    out.append("CONTRIBUTING.md: no '## Source layout' section")
  for p in sorted(packages):
    if not re.search(rf"^  {re.escape(p)}/ ", part, re.M):
      out.append(f"CONTRIBUTING.md: the layout does not name {p}/")
  return out


class LayoutDocsTest(absltest.TestCase):
  def test_layout_is_in_contributing_not_the_readme(self):
    package = os.path.join(testutil.ROOT, "hloprobe")
    packages = [
      n
      for n in os.listdir(package)
      if os.path.exists(os.path.join(package, n, "__init__.py"))
    ]
    self.assertEqual(
      layout_problems(_read("README.md"), _read("CONTRIBUTING.md"), packages),
      [],
    )

  def test_a_readme_layout_is_found(self):
    readme = "# x\n## Layout\n```\nhloprobe/\n  ir/  text\n```\n"
    contributing = "# y\n## Source layout\n```\n  ir/  text\n```\n## Z\n"
    self.assertEqual(
      layout_problems(readme, contributing, ["ir", "sites"]),
      [
        "README.md: '## Layout' is for CONTRIBUTING.md",
        "README.md: a source tree of hloprobe/",
        "CONTRIBUTING.md: the layout does not name sites/",
      ],
    )


if __name__ == "__main__":
  absltest.main()
