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


def _slug(heading: str) -> str:
  """GitHub's anchor of a heading: lower case, punctuation other than
  `-` and `_` dropped, spaces to hyphens."""
  words = re.sub(r"[^\w\- ]", "", heading.strip().lower())
  return words.replace(" ", "-")


def link_problems(readme: str, files: dict[str, str]) -> list[str]:
  """README links that lead nowhere: an `#anchor` no heading has, a file
  not in `files` (name -> its text), or an anchor that file lacks."""
  out = []
  own = {_slug(h) for h in re.findall(r"^#+ (.*)$", readme, re.M)}
  for target in re.findall(r"\]\(([^)\s]+)\)", readme):
    if target.startswith(("http://", "https://")):
      continue
    name, _, anchor = target.partition("#")
    if not name:
      heads = own
    elif name in files:
      heads = {_slug(h) for h in re.findall(r"^#+ (.*)$", files[name], re.M)}
    else:
      out.append(f"{target}: no such file")
      continue
    if anchor and anchor not in heads:
      out.append(f"{target}: no such heading")
  return out


class ReadmeTest(absltest.TestCase):
  """Issue 39 item 8: the README for users, at most 700 lines, a contents
  list, the user's tasks in order, links that lead somewhere, and the
  quick start's answer as explain prints it now."""

  def test_short_with_contents_in_the_users_order(self):
    readme = _read("README.md")
    self.assertLessEqual(len(readme.splitlines()), 700)
    heads = [
      "\nContents\n",
      "\n## Quick start\n",
      "\n## Your own program\n",
      "\n### Python\n",
      "\n### pytest\n",
      "\n## Goldens in CI\n",
      "\n## The answer first\n",
    ]
    at = [readme.find(h) for h in heads]
    self.assertNotIn(-1, at, dict(zip(heads, at)))
    self.assertEqual(at, sorted(at))

  def test_links_lead_somewhere(self):
    files = {"CONTRIBUTING.md": _read("CONTRIBUTING.md")}
    self.assertEqual(link_problems(_read("README.md"), files), [])

  def test_a_dead_link_is_found(self):
    readme = "# A b: `c`\n[x](#a-b-c) [y](#reference) [z](docs/m.md)\n"
    self.assertEqual(
      link_problems(readme, {}),
      ["#reference: no such heading", "docs/m.md: no such file"],
    )

  def test_quick_start_answer_is_the_code_change_at_the_line(self):
    # The seed's dots are one line of builtin_cases.py, read here.
    with open(
      os.path.join(testutil.ROOT, "hloprobe", "compile", "builtin_cases.py"),
      encoding="utf-8",
    ) as f:
      line = next(i for i, t in enumerate(f, 1) if "x = W @ x + b" in t)
    readme = _read("README.md")
    block = readme.partition("`make run` prints the answer first:\n\n```\n")[2]
    answer, do, check = block.split("\n")[:3]
    where = f"builtin_cases.py:{line}"
    self.assertTrue(
      answer.startswith(
        "Answer: seed_mlp on a100 (compile only): TF32_TF32_F32 at sites "
        f"0-2 ({where} `x = W @ x + b`)"
      ),
      answer,
    )
    self.assertTrue(
      do.startswith(
        f"Do: precision=jax.lax.Precision.HIGHEST on the calls at {where} "
      ),
      do,
    )
    self.assertTrue(check.startswith("Verify (PASS): hloprobe verify "), check)

  def test_batch_invariance_commands_are_well_formed(self):
    # Each `hloprobe` line of the Batch invariance section, parsed as the
    # command line parses it, with flags its command reads, built-in case
    # names, and (verify) a fix and requirements verify accepts. Its
    # verify runs are run as written in tests/commands/verify_test.py.
    import shlex

    from absl.testing import flagsaver

    from hloprobe import verify
    from hloprobe.cli import _main as cli
    from hloprobe.compile import CASES
    from hloprobe.engine.spec import parse_batch_sizes

    section = _read("README.md").split("\n## Batch invariance\n")[1]
    section = section.split("\n# ")[0]
    lines = [
      line
      for line in section.splitlines()
      if line.startswith(".venv/bin/hloprobe ")
    ]
    commands = [shlex.split(line)[1] for line in lines]
    self.assertEqual(commands, ["explain", "verify", "verify", "verify"])
    for line in lines:
      with flagsaver.flagsaver():
        argv = cli._parse_flags(["hloprobe", *shlex.split(line)[1:]])
        cli._check_flags_for(argv[1])
        values = cli.flags.FLAGS
        for case in values.case:
          self.assertIn(case, CASES, line)
        sizes = parse_batch_sizes(values.batch_sizes)
        if argv[1] == "verify":
          verify.parse_requirements(",".join(values.require), sizes)
          if values.fix is not None:
            verify.parse_fix(values.fix)


if __name__ == "__main__":
  absltest.main()
