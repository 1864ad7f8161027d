#!/usr/bin/env python3
"""Fails when the documentation points at a file that does not exist.

Checked:
  - every relative link in a Markdown file ([text](path), ![alt](path)), relative to that file;
  - every mention of a Markdown page by its repository path (docs/env.md, transport/README.md)
    in the sources, scripts and build files, which is how comments point readers to the docs.
Links to web addresses and to anchors in the same page are not checked.

usage: tools/check_doc_links.py [--root DIR]
"""
import argparse
import os
import re
import sys

MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# docs/env.md, bootstrap/README.md after a space or quote: a page named by its path (from the
# repository root, or from the folder of the file that names it). A bare name (results.md) is
# usually a file a program writes, and is left alone.
PAGE_MENTION = re.compile(r"(?<![\w./-])((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-]+\.md)\b")
TEXT_EXTENSIONS = (".md", ".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh", ".py", ".sh", ".txt", ".cmake", ".in",
                   ".json")
SKIP_DIRS = {".git", "__pycache__"}


def text_files(root):
    for directory, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not (rel_dir == "." and d.startswith("build"))]
        for name in files:
            if name.endswith(TEXT_EXTENSIONS) or name in ("run", "CMakeLists.txt"):
                yield os.path.normpath(os.path.join(rel_dir, name))


def external(target):
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None or target.startswith("#")


def check(root):
    problems = []
    checked = 0
    for path in sorted(text_files(root)):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for number, line in enumerate(lines, 1):
            targets = []
            if path.endswith(".md"):
                for match in MARKDOWN_LINK.finditer(line):
                    target = match.group(1).split("#")[0].split("?")[0]
                    if target and not external(match.group(1)):
                        targets.append((target, os.path.dirname(path)))
            for match in PAGE_MENTION.finditer(line):
                mention = match.group(1)
                # A bare file name in a Markdown file is prose about that page, beside it or not;
                # outside the repository (../shared) is not ours to check.
                if mention.startswith("..") or "/" not in mention:
                    continue
                if path.endswith(".md") and ("](" + mention) in line:
                    continue  # already a link, checked above relative to the page
                targets.append((mention, os.path.dirname(path)))
            for target, base in targets:
                checked += 1
                resolved = os.path.normpath(os.path.join(root, base, target))
                if not os.path.exists(resolved) and not os.path.exists(os.path.join(root, target)):
                    problems.append(f"{path}:{number}: {target}: no such file")
    if problems:
        print(f"{len(problems)} link(s) to files that do not exist:")
        for problem in problems:
            print("  " + problem)
        return 1
    print(f"check_doc_links: {checked} links and page mentions, every one names a file that exists")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return check(os.path.abspath(parser.parse_args().root))


if __name__ == "__main__":
    sys.exit(main())
