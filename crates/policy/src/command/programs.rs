//! The table of programs: which are known read-only, which are destructive, which wrap another
//! command, which interpret a script.
//!
//! Invariant: a program or option this table does not know is Normal, never Safe. Reasons are
//! phrased to follow the part's text: `` `dd if=x of=/dev/sda` copies raw blocks … ``.

use std::path::Path;

use super::lex::Word;
use super::{Severity, assignment_name, harmless_variable, shorten};

/// A command's arguments with small helpers for reading options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Args<'a> {
    words: &'a [Word],
}

impl<'a> Args<'a> {
    pub(crate) fn new(words: &'a [Word]) -> Self {
        Self { words }
    }

    pub(crate) fn words(&self) -> &'a [Word] {
        self.words
    }

    /// The words before `--`.
    fn options(&self) -> impl Iterator<Item = &'a str> {
        self.words.iter().map(|w| w.value.as_str()).take_while(|v| *v != "--")
    }

    /// True when a short-option cluster (`-rf`) before `--` contains `flag`.
    pub(crate) fn short(&self, flag: char) -> bool {
        self.options().any(|v| {
            v.len() > 1 && v.starts_with('-') && !v.starts_with("--") && v[1..].contains(flag)
        })
    }

    /// True when `--name` or `--name=…` appears before `--`.
    pub(crate) fn long(&self, name: &str) -> bool {
        self.options()
            .any(|v| v == name || v.strip_prefix(name).is_some_and(|r| r.starts_with('=')))
    }

    /// True when a word before `--` is exactly `value`.
    pub(crate) fn has(&self, value: &str) -> bool {
        self.options().any(|v| v == value)
    }

    /// The words that are not options (everything after `--`; `-` alone counts).
    pub(crate) fn positionals(&self) -> Vec<&'a Word> {
        let mut out = Vec::new();
        let mut after_dashes = false;
        for word in self.words {
            if after_dashes {
                out.push(word);
            } else if word.value == "--" {
                after_dashes = true;
            } else if !(word.value.starts_with('-') && word.value.len() > 1) {
                out.push(word);
            }
        }
        out
    }

    fn first_positional(&self) -> Option<&'a str> {
        self.positionals().first().map(|w| w.value.as_str())
    }
}

/// What a wrapper program does with the rest of its words.
pub(crate) enum Unwrap<'a> {
    /// Not a wrapper.
    NotWrapper,
    /// Runs `rest` as a command (nothing when `rest` is empty).
    Inner {
        rest: &'a [Word],
        /// The wrapper itself makes the part at least Normal.
        floor: bool,
        /// The inner command gets more arguments at run time (`xargs`).
        adds_arguments: bool,
    },
    /// Runs a script (`eval`, `env -S`, `watch`); `None` when it is only known at run time.
    Script { script: Option<String>, floor: bool },
}

fn literal_script(words: &[Word]) -> Option<String> {
    words
        .iter()
        .all(|w| !w.expands && !w.substitutes)
        .then(|| words.iter().map(|w| w.value.as_str()).collect::<Vec<_>>().join(" "))
}

/// Skips options: `with_value` options take the next word (or an attached value).
fn skip_options<'a>(
    words: &'a [Word],
    with_value: &[&str],
    stop_at_first_positional: bool,
) -> &'a [Word] {
    let mut index = 0;
    while let Some(word) = words.get(index) {
        let value = word.value.as_str();
        if value == "--" {
            return &words[index + 1..];
        }
        if !value.starts_with('-') || value == "-" {
            break;
        }
        let takes_value = with_value.contains(&value);
        index += if takes_value { 2 } else { 1 };
        if !stop_at_first_positional {
            continue;
        }
    }
    words.get(index..).unwrap_or(&[])
}

pub(crate) fn unwrap<'a>(program: &str, args: &'a [Word]) -> Unwrap<'a> {
    match program {
        "env" => {
            let mut floor = false;
            let mut index = 0;
            while let Some(word) = args.get(index) {
                let value = word.value.as_str();
                match value {
                    "-i" | "-" | "--ignore-environment" | "-0" | "--null" | "-v" | "--debug" => {
                        index += 1;
                    }
                    "-u" | "--unset" => index += 2,
                    "-C" | "--chdir" => {
                        floor = true;
                        index += 2;
                    }
                    "-S" | "--split-string" => {
                        return Unwrap::Script {
                            script: args.get(index + 1..).and_then(literal_script),
                            floor: true,
                        };
                    }
                    "--" => {
                        index += 1;
                        break;
                    }
                    _ if value.starts_with("-u") || value.starts_with("--unset=") => index += 1,
                    _ if value.starts_with('-') => {
                        floor = true;
                        index += 1;
                    }
                    _ => break,
                }
            }
            while let Some(word) = args.get(index) {
                match assignment_name(word) {
                    Some(name) => {
                        floor |= !harmless_variable(name);
                        index += 1;
                    }
                    None => break,
                }
            }
            Unwrap::Inner { rest: args.get(index..).unwrap_or(&[]), floor, adds_arguments: false }
        }
        "command" => {
            let rest = skip_options(args, &[], true);
            let lookup = args.iter().take_while(|w| w.value.starts_with('-')).any(|w| {
                w.value.starts_with('-') && (w.value.contains('v') || w.value.contains('V'))
            });
            Unwrap::Inner {
                rest: if lookup { &[] } else { rest },
                floor: false,
                adds_arguments: false,
            }
        }
        "builtin" | "nohup" => Unwrap::Inner {
            rest: args,
            // `nohup` writes `nohup.out`.
            floor: program == "nohup",
            adds_arguments: false,
        },
        "exec" => Unwrap::Inner {
            rest: skip_options(args, &["-a"], true),
            floor: false,
            adds_arguments: false,
        },
        "time" => {
            let writes = args
                .iter()
                .take_while(|w| w.value.starts_with('-'))
                .any(|w| w.value == "-o" || w.value.starts_with("--output"));
            Unwrap::Inner {
                rest: skip_options(args, &["-o", "-f", "--output", "--format"], true),
                floor: writes,
                adds_arguments: false,
            }
        }
        "nice" => Unwrap::Inner {
            rest: skip_options(args, &["-n", "--adjustment"], true),
            floor: false,
            adds_arguments: false,
        },
        "stdbuf" => Unwrap::Inner {
            rest: skip_options(args, &["-i", "-o", "-e", "--input", "--output", "--error"], true),
            floor: false,
            adds_arguments: false,
        },
        "timeout" => {
            let rest = skip_options(args, &["-s", "--signal", "-k", "--kill-after"], true);
            // The duration, then the command.
            Unwrap::Inner {
                rest: rest.get(1..).unwrap_or(&[]),
                floor: false,
                adds_arguments: false,
            }
        }
        "xargs" => {
            let rest = skip_options(
                args,
                &[
                    "-I",
                    "-L",
                    "-n",
                    "-P",
                    "-s",
                    "-d",
                    "-E",
                    "-a",
                    "--arg-file",
                    "--delimiter",
                    "--max-args",
                    "--max-procs",
                    "--max-lines",
                    "--replace",
                    "--eof",
                    "--max-chars",
                    "--process-slot-var",
                ],
                true,
            );
            Unwrap::Inner { rest, floor: false, adds_arguments: true }
        }
        "eval" => Unwrap::Script { script: literal_script(args), floor: true },
        // `trap 'commands' SIGNAL…`: the commands run later in this shell.
        "trap" => match args.first() {
            Some(first) if !first.value.starts_with('-') && args.len() > 1 => {
                Unwrap::Script { script: literal_script(std::slice::from_ref(first)), floor: true }
            }
            _ => Unwrap::Inner { rest: &[], floor: true, adds_arguments: false },
        },
        "watch" => {
            let rest = skip_options(args, &["-n", "--interval", "-q", "--equexit"], true);
            Unwrap::Script { script: literal_script(rest), floor: true }
        }
        _ => Unwrap::NotWrapper,
    }
}

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"];
const OTHER_INTERPRETERS: &[&str] = &[
    "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "source", ".",
];

pub(crate) fn is_shell(program: &str) -> bool {
    SHELLS.contains(&program)
}

pub(crate) fn is_interpreter(program: &str) -> bool {
    is_shell(program) || OTHER_INTERPRETERS.contains(&program)
}

/// Where an interpreter takes its program from.
pub(crate) enum Source {
    /// `-c SCRIPT` / `-e CODE`; `None` when it is only known at run time.
    Inline(Option<String>),
    /// Standard input (no script argument, or `-`).
    Stdin,
    /// A process substitution (`bash <(curl …)`).
    Substituted,
    /// A file or module.
    File,
}

pub(crate) fn interpreter_source(program: &str, args: &Args<'_>) -> Source {
    let words = args.words();
    let shell = is_shell(program);
    let inline_flag = |value: &str| -> bool {
        let cluster = &value[1..];
        if shell {
            cluster.contains('c')
        } else if matches!(program, "perl" | "ruby") {
            cluster.contains('e') || cluster.contains('E')
        } else if matches!(program, "node" | "nodejs") {
            matches!(value, "-e" | "-p" | "--eval" | "--print")
        } else if program == "php" {
            value == "-r"
        } else {
            value == "-c" || value == "-e"
        }
    };
    let mut index = 0;
    while let Some(word) = words.get(index) {
        let value = word.value.as_str();
        if value == "-" {
            return Source::Stdin;
        }
        if value == "--" {
            index += 1;
            break;
        }
        if value.starts_with('-') && value.len() > 1 {
            if inline_flag(value) {
                let script = words.get(index + 1);
                return Source::Inline(
                    script.filter(|w| !w.expands && !w.substitutes).map(|w| w.value.clone()),
                );
            }
            let takes_value = if shell {
                (!value.starts_with("--") && value.contains('o'))
                    || matches!(value, "--rcfile" | "--init-file")
            } else {
                matches!(value, "-W" | "-X" | "-I" | "-M" | "-r" | "--require")
            };
            if !shell && value == "-m" {
                return Source::File;
            }
            index += if takes_value { 2 } else { 1 };
            continue;
        }
        break;
    }
    match words.get(index) {
        None => Source::Stdin,
        Some(word) if word.substitutes && word.raw.starts_with("<(") => Source::Substituted,
        Some(_) => Source::File,
    }
}

/// Why writing `path` is dangerous, if it is a disk device or a system location.
pub(crate) fn system_path_reason(path: &Path) -> Option<&'static str> {
    let text = path.to_string_lossy();
    const DISKS: &[&str] = &[
        "/dev/sd",
        "/dev/hd",
        "/dev/vd",
        "/dev/xvd",
        "/dev/nvme",
        "/dev/mmcblk",
        "/dev/disk",
        "/dev/dm-",
        "/dev/mapper/",
    ];
    if DISKS.iter().any(|prefix| text.starts_with(prefix)) {
        return Some("writes to a raw disk device");
    }
    const SYSTEM: &[&str] = &[
        "/etc", "/boot", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/sys", "/proc", "/System",
        "/Library",
    ];
    if SYSTEM.iter().any(|dir| path.starts_with(dir)) {
        return Some("overwrites a system file");
    }
    None
}

/// Programs that only read, whatever their arguments (their redirections are judged apart).
const ALWAYS_SAFE: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "which",
    "whoami",
    "uname",
    "stat",
    "du",
    "df",
    "cut",
    "tr",
    "diff",
    "cmp",
    "nl",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "grep",
    "egrep",
    "fgrep",
    "jq",
    "hexdump",
    "od",
    "id",
    "groups",
    "printenv",
    "type",
    "test",
    "[",
    "[[",
    "seq",
    "sleep",
    "column",
    "paste",
    "comm",
    "join",
    "fold",
    "expand",
    "unexpand",
    "rev",
    "tac",
    "strings",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "base32",
    "base64",
    ":",
    "cd",
    "pushd",
    "popd",
    "dirs",
    "read",
    "exit",
    "return",
    "break",
    "continue",
    "shift",
    "wait",
    "for",
    "case",
    "select",
    "function",
    "whereis",
    "ps",
    "pgrep",
    "uptime",
    "free",
    "nproc",
    "locale",
    "tty",
    "arch",
    "cal",
    "expr",
    "numfmt",
    "look",
];

/// Judges a program that is not a wrapper, an interpreter, `rm` or `find`.
pub(crate) fn judge(program: &str, args: &Args<'_>, text: &str) -> Severity {
    let dangerous =
        |why: &str| Severity::Dangerous { reason: format!("`{}` {why}", shorten(text)) };
    let safe_unless = |unsafe_: bool| if unsafe_ { Severity::Normal } else { Severity::Safe };
    if ALWAYS_SAFE.contains(&program) {
        return Severity::Safe;
    }
    if program.starts_with("mkfs") {
        return dangerous("formats a file system");
    }
    match program {
        "date" => safe_unless(args.short('s') || args.long("--set")),
        "hostname" => safe_unless(!args.words().is_empty()),
        "sort" => {
            safe_unless(args.short('o') || args.long("--output") || args.long("--compress-program"))
        }
        "uniq" | "xxd" => safe_unless(args.positionals().len() > 1),
        "tree" => safe_unless(args.short('o')),
        "file" => safe_unless(args.short('C') || args.long("--compile")),
        "rg" => safe_unless(args.long("--pre")),
        "fd" | "fdfind" => safe_unless(
            args.short('x') || args.short('X') || args.long("--exec") || args.long("--exec-batch"),
        ),
        "sed" => sed(args),
        "git" => git(args, &dangerous),
        "set" => safe_unless(!args.words().iter().all(|w| {
            w.value.starts_with('-')
                || w.value.starts_with('+')
                || matches!(w.value.as_str(), "pipefail" | "errexit" | "nounset" | "xtrace")
        })),
        "dd" => dangerous("copies raw blocks and can overwrite a disk"),
        "mke2fs" | "mkswap" => dangerous("formats a file system"),
        "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "parted" => {
            dangerous("rewrites a partition table")
        }
        "shred" => dangerous("destroys file contents beyond recovery"),
        "wipefs" => dangerous("erases file-system signatures"),
        "chmod" | "chown" | "chgrp" => {
            if args.short('R') || args.long("--recursive") {
                dangerous("changes permissions or ownership of a whole tree")
            } else {
                Severity::Normal
            }
        }
        "sudo" | "su" | "doas" | "pkexec" | "run0" => {
            dangerous("runs a command as another user (usually root)")
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            dangerous("shuts down or restarts the machine")
        }
        "systemctl" => match args.first_positional() {
            Some("poweroff" | "reboot" | "halt" | "kexec" | "suspend" | "hibernate") => {
                dangerous("shuts down or restarts the machine")
            }
            _ => Severity::Normal,
        },
        "init" | "telinit" => match args.first_positional() {
            Some("0" | "6") => dangerous("shuts down or restarts the machine"),
            _ => Severity::Normal,
        },
        "kill" => {
            // The first word may be the signal (`-9`); a target of `-1` is every process.
            let targets = match args.words().first().map(|w| w.value.as_str()) {
                Some(first) if first.starts_with('-') && first != "--" && first != "-1" => {
                    args.words().get(1..).unwrap_or(&[])
                }
                _ => args.words(),
            };
            let targets: Vec<&str> = targets
                .iter()
                .map(|w| w.value.as_str())
                .skip_while(|v| matches!(*v, "-s" | "-n" | "--"))
                .collect();
            if targets.contains(&"-1") {
                dangerous("kills every process you can signal")
            } else {
                Severity::Normal
            }
        }
        "killall" | "pkill" => dangerous("kills processes by name, possibly more than intended"),
        "crontab" => {
            if args.short('r') {
                dangerous("removes your crontab without confirmation")
            } else {
                Severity::Normal
            }
        }
        "npm" | "pnpm" | "yarn" | "bun" => match args.first_positional() {
            Some("publish") if args.long("--dry-run") => Severity::Normal,
            Some("publish" | "unpublish") => {
                dangerous("publishes a package, which cannot be taken back")
            }
            _ => Severity::Normal,
        },
        "cargo" | "poetry" | "uv" | "hatch" | "flit" => match args.first_positional() {
            Some("publish") if args.long("--dry-run") => Severity::Normal,
            Some("publish") => dangerous("publishes a package, which cannot be taken back"),
            _ => Severity::Normal,
        },
        "twine" | "gem" => match args.first_positional() {
            Some("upload" | "push") => dangerous("publishes a package, which cannot be taken back"),
            _ => Severity::Normal,
        },
        "docker" | "podman" => {
            let positionals: Vec<&str> =
                args.positionals().iter().map(|w| w.value.as_str()).collect();
            match positionals.as_slice() {
                ["system" | "volume" | "image" | "container" | "builder", "prune", ..] => {
                    dangerous("deletes containers, images or volumes for good")
                }
                _ => Severity::Normal,
            }
        }
        "terraform" | "tofu" => match args.first_positional() {
            Some("destroy") => dangerous("destroys infrastructure"),
            Some("apply") if args.has("-destroy") => dangerous("destroys infrastructure"),
            _ => Severity::Normal,
        },
        "kubectl" => match args.first_positional() {
            Some("delete") => dangerous("deletes cluster resources"),
            _ => Severity::Normal,
        },
        _ => Severity::Normal,
    }
}

fn sed(args: &Args<'_>) -> Severity {
    let words = args.words();
    let mut scripts: Vec<&str> = Vec::new();
    let mut index = 0;
    let mut explicit_script = false;
    let mut positional_script = None;
    while let Some(word) = words.get(index) {
        let value = word.value.as_str();
        index += 1;
        if value == "--" {
            break;
        }
        if value == "-e" || value == "--expression" {
            explicit_script = true;
            match words.get(index) {
                Some(script) if !script.expands && !script.substitutes => {
                    scripts.push(&script.value)
                }
                _ => return Severity::Normal,
            }
            index += 1;
        } else if let Some(script) = value.strip_prefix("--expression=") {
            explicit_script = true;
            scripts.push(script);
        } else if value == "-f" || value.starts_with("--file") || value == "-l" {
            // A script file is not visible here.
            return Severity::Normal;
        } else if value.starts_with("--in-place") {
            return Severity::Normal;
        } else if value.starts_with("--") {
            if !matches!(
                value,
                "--quiet"
                    | "--silent"
                    | "--regexp-extended"
                    | "--separate"
                    | "--unbuffered"
                    | "--null-data"
                    | "--posix"
                    | "--debug"
                    | "--sandbox"
            ) {
                return Severity::Normal;
            }
        } else if value.starts_with('-') && value.len() > 1 {
            if value[1..].chars().any(|c| !matches!(c, 'n' | 'E' | 'r' | 's' | 'u' | 'z')) {
                // `-i` and anything unknown.
                return Severity::Normal;
            }
        } else if positional_script.is_none() && !explicit_script {
            if word.expands || word.substitutes {
                return Severity::Normal;
            }
            positional_script = Some(value);
        }
    }
    scripts.extend(positional_script);
    if scripts.is_empty() {
        return Severity::Normal;
    }
    if scripts.iter().all(|script| sed_script_is_read_only(script)) {
        Severity::Safe
    } else {
        Severity::Normal
    }
}

/// True when a sed script has no `w`, `W` or `e` command and no `s///w` or `s///e` flag.
fn sed_script_is_read_only(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut at = 0;
    let skip_delimited = |at: &mut usize, delimiter: char| -> bool {
        while let Some(&c) = chars.get(*at) {
            *at += 1;
            if c == '\\' {
                *at += 1;
            } else if c == delimiter {
                return true;
            }
        }
        false
    };
    let skip_line = |at: &mut usize| {
        while let Some(&c) = chars.get(*at) {
            *at += 1;
            if c == '\n' {
                break;
            }
        }
    };
    loop {
        while chars.get(at).is_some_and(|c| c.is_whitespace() || *c == ';') {
            at += 1;
        }
        let Some(&first) = chars.get(at) else { return true };
        // Addresses: `12`, `$`, `/re/`, `\%re%`, ranges, steps, `!`.
        let mut c = first;
        loop {
            match c {
                '0'..='9' | '$' | ',' | '~' | '+' | '!' | ' ' => at += 1,
                '/' => {
                    at += 1;
                    if !skip_delimited(&mut at, '/') {
                        return false;
                    }
                    while chars.get(at).is_some_and(|c| matches!(c, 'I' | 'M')) {
                        at += 1;
                    }
                }
                '\\' => {
                    let Some(&delimiter) = chars.get(at + 1) else { return false };
                    at += 2;
                    if !skip_delimited(&mut at, delimiter) {
                        return false;
                    }
                }
                _ => break,
            }
            match chars.get(at) {
                Some(&next) => c = next,
                None => return true,
            }
        }
        at += 1;
        match c {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'l' | 'n' | 'N' | 'p' | 'P'
            | 'x' | 'z' | 'F' | 'q' | 'Q' => {
                while chars.get(at).is_some_and(char::is_ascii_digit) {
                    at += 1;
                }
            }
            '#' | 'a' | 'i' | 'c' | 'r' | 'R' | ':' | 'b' | 't' | 'T' | 'v' => {
                // Text, a file to read, or a label: up to the end of the line (labels and
                // branches also end at `;`).
                if matches!(c, 'b' | 't' | 'T' | ':' | 'v') {
                    while chars.get(at).is_some_and(|c| *c != ';' && *c != '\n') {
                        at += 1;
                    }
                } else {
                    skip_line(&mut at);
                }
            }
            's' | 'y' => {
                let Some(&delimiter) = chars.get(at) else { return false };
                if delimiter == '\n' || delimiter == '\\' {
                    return false;
                }
                at += 1;
                if !skip_delimited(&mut at, delimiter) || !skip_delimited(&mut at, delimiter) {
                    return false;
                }
                if c == 's' {
                    while let Some(&flag) = chars.get(at) {
                        match flag {
                            'w' | 'W' | 'e' => return false,
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => at += 1,
                            _ => break,
                        }
                    }
                }
            }
            _ => return false,
        }
    }
}

fn git(args: &Args<'_>, dangerous: &dyn Fn(&str) -> Severity) -> Severity {
    let words = args.words();
    let mut floor = Severity::Safe;
    let mut index = 0;
    while let Some(word) = words.get(index) {
        let value = word.value.as_str();
        match value {
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => index += 2,
            // `-c core.pager=…`, `-c alias.x=!…`, `--exec-path` can make git run anything.
            "-c" | "--exec-path" | "--config-env" => {
                floor = Severity::Normal;
                index += 2;
            }
            "--no-pager"
            | "-P"
            | "-p"
            | "--paginate"
            | "--bare"
            | "--no-replace-objects"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-optional-locks"
            | "--no-lazy-fetch" => index += 1,
            "--version" | "--help" | "-h" => return floor,
            _ if ["--git-dir=", "--work-tree=", "--namespace="]
                .iter()
                .any(|p| value.starts_with(p)) =>
            {
                index += 1;
            }
            _ if value.starts_with("--exec-path=") || value.starts_with("--config-env=") => {
                floor = Severity::Normal;
                index += 1;
            }
            _ if value.starts_with('-') => return Severity::Normal,
            _ => break,
        }
    }
    let Some(subcommand) = words.get(index) else { return Severity::Normal };
    if !subcommand.is_literal() {
        return Severity::Normal;
    }
    let rest = Args::new(words.get(index + 1..).unwrap_or(&[]));
    let safe_unless = |unsafe_: bool| if unsafe_ { Severity::Normal } else { Severity::Safe };
    let verdict = match subcommand.value.as_str() {
        "status" | "blame" | "annotate" | "rev-parse" | "rev-list" | "ls-files" | "ls-tree"
        | "cat-file" | "merge-base" | "describe" | "name-rev" | "show-ref" | "for-each-ref"
        | "count-objects" | "check-ignore" | "check-attr" | "var" | "help" | "version" => {
            Severity::Safe
        }
        "diff" | "log" | "show" | "shortlog" | "whatchanged" | "range-diff" => {
            safe_unless(rest.long("--output") || rest.long("--ext-diff"))
        }
        "grep" => safe_unless(rest.short('O') || rest.long("--open-files-in-pager")),
        "branch" => {
            let delete = rest.short('d') || rest.long("--delete");
            let force = rest.short('f') || rest.long("--force");
            if rest.short('D') || (delete && force) {
                dangerous("deletes a branch even if its commits are not merged anywhere")
            } else if delete
                || force
                || ['m', 'M', 'c', 'C', 'u'].iter().any(|f| rest.short(*f))
                || [
                    "--move",
                    "--copy",
                    "--set-upstream-to",
                    "--unset-upstream",
                    "--edit-description",
                ]
                .iter()
                .any(|f| rest.long(f))
            {
                Severity::Normal
            } else if rest.long("--list") || rest.short('l') {
                Severity::Safe
            } else {
                safe_unless(!rest.positionals().is_empty())
            }
        }
        "tag" => {
            if rest.short('d') || rest.long("--delete") {
                Severity::Normal
            } else if rest.long("--list") || rest.short('l') {
                Severity::Safe
            } else {
                safe_unless(!rest.words().is_empty())
            }
        }
        "remote" => match rest.first_positional() {
            None | Some("get-url") => Severity::Safe,
            Some(_) => Severity::Normal,
        },
        "config" => safe_unless(
            [
                "--unset",
                "--unset-all",
                "--add",
                "--replace-all",
                "--rename-section",
                "--remove-section",
                "--edit",
            ]
            .iter()
            .any(|f| rest.long(f))
                || rest.short('e')
                || !(["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list"]
                    .iter()
                    .any(|f| rest.long(f))
                    || rest.has("-l")
                    || matches!(rest.first_positional(), Some("get" | "list"))),
        ),
        "stash" => match rest.first_positional() {
            Some("list" | "show") => Severity::Safe,
            Some("drop" | "clear") => dangerous("deletes stashed changes for good"),
            _ => Severity::Normal,
        },
        "reflog" => match rest.first_positional() {
            None | Some("show") => Severity::Safe,
            Some(_) => Severity::Normal,
        },
        "worktree" => safe_unless(rest.first_positional() != Some("list")),
        "push" => {
            let refspecs: Vec<&str> = rest.positionals().iter().map(|w| w.value.as_str()).collect();
            if rest.short('f')
                || rest.long("--force")
                || rest.long("--force-with-lease")
                || refspecs.iter().skip(1).any(|r| r.starts_with('+'))
            {
                dangerous("rewrites remote history")
            } else if rest.short('d')
                || rest.long("--delete")
                || refspecs.iter().skip(1).any(|r| r.starts_with(':'))
            {
                dangerous("deletes a remote branch or tag")
            } else if rest.long("--mirror") || rest.long("--prune") {
                dangerous("deletes remote refs the local repository lacks")
            } else {
                Severity::Normal
            }
        }
        "reset" => {
            if rest.long("--hard") {
                dangerous("discards uncommitted work")
            } else {
                Severity::Normal
            }
        }
        "clean" => {
            if rest.short('n') || rest.long("--dry-run") {
                Severity::Normal
            } else if rest.short('f') || rest.long("--force") {
                dangerous("deletes untracked files for good")
            } else {
                Severity::Normal
            }
        }
        "checkout" => {
            let dashes = rest.words().iter().position(|w| w.value == "--");
            if rest.short('f') || rest.long("--force") {
                dangerous("discards uncommitted changes")
            } else if dashes.is_some_and(|at| rest.words().len() > at + 1)
                || rest.positionals().iter().any(|w| w.value == ".")
            {
                dangerous("discards uncommitted changes to the named paths")
            } else {
                Severity::Normal
            }
        }
        "restore" => {
            let staged = rest.short('S') || rest.long("--staged");
            let worktree = rest.short('W') || rest.long("--worktree");
            if (!staged || worktree) && !rest.positionals().is_empty() {
                dangerous("discards uncommitted changes")
            } else {
                Severity::Normal
            }
        }
        "switch" => {
            if rest.short('f') || rest.long("--force") || rest.long("--discard-changes") {
                dangerous("discards uncommitted changes")
            } else {
                Severity::Normal
            }
        }
        "filter-branch" | "filter-repo" => dangerous("rewrites the repository's history"),
        _ => Severity::Normal,
    };
    floor.max(verdict)
}
