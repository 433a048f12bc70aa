//! fs_mark's command line, as a clap parser, validated into the engine's [`Config`] and the
//! report's [`ReportOptions`].
//!
//! The short options are fs_mark's (`-h -k -F -v -S -D -N -d -l -L -n -p -r -s -t -w`), with
//! values attached or separate (`-S4`, `-S 4`) and the last of a repeated option winning, as
//! with getopt. Each also has a long name. Differences from fs_mark, all in the direction of
//! refusing what fs_mark silently misreads:
//!
//! - numbers must be numbers (fs_mark's `atoi` reads `-n abc` as 0); `-s` and `-w` also take
//!   binary size suffixes (`4k`);
//! - `-n 0`, `-w 0`, `-r` over 128 and `-N` without `-D` are refused (fs_mark divides by zero,
//!   loops forever, overflows a buffer, or silently uses a directory named `00`);
//! - `-t 0` is refused (fs_mark quietly runs one thread per directory), and so are names it
//!   cannot make sensibly: `-r` over `-p` (its header then counts negative time-stamp bytes)
//!   and `-r 0` (every name made in the same second is the same: files are silently reused
//!   and the unlink pass fails);
//! - more than 64 `-d` is refused at 65, not 66; `-d` paths have no length limit;
//! - `-h` prints help to stdout and exits 0 (fs_mark: usage to stderr, exit 1); usage errors
//!   exit 2, run failures 1.
//!
//! Extensions: `-S 7` (syncfs per used directory), `--json FILE` and `--latency`.

use std::path::PathBuf;

use clap::{ArgAction, Parser};

use crate::cli::backend_args::BackendArgs;
use crate::cli::observe::ObserveArgs;
use crate::cli::tool::SharedArgs;
use crate::report::fsmark::ReportOptions;
use crate::units::parse_size;
use crate::workload::fsmark::config::{
    Config, ConfigError, DEFAULT_LOG_FILE, MAX_FILES, MAX_IO_SIZE, MAX_NAME_LEN, MAX_THREADS,
    SECS_PER_SUBDIR, SubdirPolicy, SyncMethod,
};

const AFTER_HELP: &str = "\
Sync methods (-S):
  0  no sync() or fsync()
  1  fsync() each file before close (default)
  2  sync() after the write loop, then reopen and fsync() the thread's first file
  3  after the loop, reopen and fsync() each file in reverse order
  4  sync(), then the reverse reopen/fsync pass
  5  after the loop, reopen and fsync() each file in creation order
  6  sync(), then the in-order reopen/fsync pass
  7  fslab extension: after the loop, syncfs() each directory the thread wrote into;
     its time goes to the SYNC column, like sync()

Threads: fs_mark forks processes; fsmark runs threads, started afresh for every iteration
(each with its own random seed and starting subdirectory, as fs_mark's children have).
Thread k works in the (k mod number-of-d)th -d directory.

Output: fs_mark 3.3's header, table and summary on stdout, the same header and rows appended
to the log file (-l, default fs_log.txt). Extensions never change that text:
  --json FILE   per-iteration count, files/sec, app overhead and per-syscall latency
                percentiles (p50/p90/p99/p99.9/max, microseconds), rewritten after each loop
  --latency     print the latency percentiles as a table after the summary
  A progress bar appears on stderr when it is a terminal and an iteration runs over 1 s.

Filesystems: by default the run goes to labfs, made fresh on a 1 GiB in-memory device
(--device, -o and --mkfs choose another device and options; the -d directories' parents are
created on it, as labfs starts empty). --fs host runs on the host's real directories.
--stats prints XFS statistics for the run (labfs's, or the kernel's /proc/fs/xfs/stat) to
stderr; --trace records tracepoints (--trace list shows them).

-F stops cleanly with the summary once the free-space check fails (fs_mark exits with an
error there). Differences from fs_mark: -h/--help exit 0 (fs_mark exits 1); garbage numbers,
-n 0, -w 0, -t 0, -r 0, -r over -p and -N without -D are refused; usage errors exit 2, run
failures exit 1. Ctrl-C stops after the file in hand, unlinks what the iteration made (unless
files are kept) and prints that iteration's row and the summary; a second Ctrl-C exits 130.";

fn parse_number(s: &str) -> Result<u32, String> {
    s.parse::<u32>()
        .map_err(|_| format!("'{s}' is not a whole number from 0 to {}", u32::MAX))
}

fn parse_bytes(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

/// fs_mark's options plus fslab's extensions.
#[derive(Debug, Clone, PartialEq, Eq, Parser)]
#[command(
    name = "fsmark",
    about = "fs_mark 3.3 compatible metadata benchmark: create, write, sync and unlink files",
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true,
    allow_negative_numbers = true,
    after_help = AFTER_HELP
)]
pub struct FsmarkArgs {
    /// Print this help and exit 0.
    #[arg(short = 'h', long = "help", action = ArgAction::Help)]
    pub help: Option<bool>,

    /// Keep files after each iteration (no unlink pass).
    #[arg(short = 'k', long = "keep")]
    pub keep: bool,

    /// Run until the filesystem is full (implies -k), then print the summary.
    #[arg(short = 'F', long = "fill")]
    pub fill: bool,

    /// Verbose table: min/avg/max microseconds of each system call.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,

    /// Sync method 0..7 (see below).
    #[arg(short = 'S', long = "sync-method", value_name = "METHOD", default_value_t = 1,
          value_parser = parse_number)]
    pub sync_method: u32,

    /// Number of subdirectories in each directory (at least 2).
    #[arg(short = 'D', long = "subdirs", value_name = "NUM", value_parser = parse_number)]
    pub subdirs: Option<u32>,

    /// Files per subdirectory in round-robin mode (needs -D).
    #[arg(short = 'N', long = "files-per-subdir", value_name = "NUM", value_parser = parse_number)]
    pub files_per_subdir: Option<u32>,

    /// Directory to work in; repeat for several (at most 64).
    #[arg(short = 'd', long = "dir", value_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// Log file, appended to.
    #[arg(short = 'l', long = "log-file", value_name = "FILE", default_value = DEFAULT_LOG_FILE)]
    pub log_file: PathBuf,

    /// Number of iterations (implies -k; 0 and 1 both run once).
    #[arg(short = 'L', long = "loops", value_name = "NUM", default_value_t = 0,
          value_parser = parse_number)]
    pub loops: u32,

    /// Files per thread per iteration (1..1000000).
    #[arg(short = 'n', long = "num-files", value_name = "NUM", default_value_t = 1000,
          value_parser = parse_number)]
    pub num_files: u32,

    /// Total bytes in each file name (at most 128).
    #[arg(short = 'p', long = "name-len", value_name = "NUM", default_value_t = 40,
          value_parser = parse_number)]
    pub name_len: u32,

    /// Random bytes at the end of each file name (at most 128).
    #[arg(short = 'r', long = "rand-len", value_name = "NUM", default_value_t = 24,
          value_parser = parse_number)]
    pub rand_len: u32,

    /// Size of each file in bytes (k/m/g suffixes accepted).
    #[arg(short = 's', long = "size", value_name = "BYTES", default_value = "51200",
          value_parser = parse_bytes)]
    pub file_size: u64,

    /// Total number of threads (a multiple of the number of -d; at most 64).
    #[arg(short = 't', long = "threads", value_name = "NUM", default_value_t = 1,
          value_parser = parse_number)]
    pub threads: u32,

    /// Bytes per write() call (1..1048576; k/m suffixes accepted).
    #[arg(short = 'w', long = "io-size", value_name = "BYTES", default_value = "16384",
          value_parser = parse_bytes)]
    pub io_size: u64,

    /// Also write per-iteration results and latency percentiles as JSON to FILE.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Print per-syscall latency percentiles as a table after the summary.
    #[arg(long = "latency")]
    pub latency: bool,

    /// Which filesystem the run uses (labfs by default).
    #[command(flatten)]
    pub backend: BackendArgs,

    /// Tracing and XFS statistics.
    #[command(flatten)]
    pub observe: ObserveArgs,
}

impl SharedArgs for FsmarkArgs {
    fn backend(&self) -> &BackendArgs {
        &self.backend
    }

    fn observe(&self) -> &ObserveArgs {
        &self.observe
    }
}

impl FsmarkArgs {
    /// Validate in fs_mark's order and split into the engine's config and report options.
    pub fn to_config(&self) -> Result<(Config, ReportOptions), ConfigError> {
        // Per-option limits (fs_mark checks these while parsing).
        if self.dirs.len() > MAX_THREADS as usize {
            return Err(ConfigError::TooManyDirs);
        }
        if let Some(d) = self.subdirs
            && d < 2
        {
            return Err(ConfigError::TooFewSubdirs(d));
        }
        if self.num_files > MAX_FILES {
            return Err(ConfigError::TooManyFiles(self.num_files));
        }
        if self.num_files == 0 {
            return Err(ConfigError::NoFiles);
        }
        if self.name_len > MAX_NAME_LEN {
            return Err(ConfigError::NameTooLong(self.name_len));
        }
        if self.rand_len > MAX_NAME_LEN {
            return Err(ConfigError::RandomTooLong(self.rand_len));
        }
        if self.rand_len > self.name_len {
            return Err(ConfigError::RandomLongerThanName {
                name: self.name_len,
                rand: self.rand_len,
            });
        }
        if self.rand_len == 0 {
            return Err(ConfigError::NoRandomBytes);
        }
        let sync = SyncMethod::from_number(self.sync_method)
            .ok_or(ConfigError::BadSyncMethod(self.sync_method))?;
        if self.threads > MAX_THREADS {
            return Err(ConfigError::TooManyThreads(self.threads));
        }
        if self.threads == 0 {
            return Err(ConfigError::NoThreads);
        }
        if self.io_size > MAX_IO_SIZE {
            return Err(ConfigError::IoSizeTooLarge(self.io_size));
        }
        if self.io_size == 0 {
            return Err(ConfigError::ZeroIoSize);
        }
        // Then fs_mark's post-parse checks, in its order.
        if self.dirs.is_empty() {
            return Err(ConfigError::NoDirectory);
        }
        let subdirs = match (self.subdirs, self.files_per_subdir) {
            (None, Some(_)) => return Err(ConfigError::FilesPerSubdirWithoutSubdirs),
            (None, None) => SubdirPolicy::None,
            (Some(subdirs), Some(per_subdir)) => SubdirPolicy::RoundRobin {
                subdirs,
                per_subdir,
            },
            (Some(subdirs), None) => SubdirPolicy::TimeHash {
                subdirs,
                secs_per_subdir: SECS_PER_SUBDIR,
            },
        };
        let dirs = self.dirs.len() as u32;
        let threads = if dirs > self.threads {
            dirs
        } else if !self.threads.is_multiple_of(dirs) {
            return Err(ConfigError::ThreadsNotMultipleOfDirs {
                threads: self.threads,
                dirs,
            });
        } else {
            self.threads
        };
        let config = Config {
            dirs: self.dirs.clone(),
            threads,
            num_files: self.num_files,
            file_size: self.file_size,
            io_size: self.io_size,
            name_len: self.name_len,
            rand_len: self.rand_len,
            sync,
            subdirs,
            keep_files: self.keep || self.fill || self.loops > 0,
            loops: self.loops,
            fill: self.fill,
            latency: self.latency || self.json.is_some(),
        };
        let report = ReportOptions {
            verbose: self.verbose,
            log_file: self.log_file.clone(),
            json: self.json.clone(),
            latency_table: self.latency,
        };
        Ok((config, report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<(Config, ReportOptions), ConfigError> {
        let mut argv = vec!["fsmark"];
        argv.extend_from_slice(args);
        FsmarkArgs::try_parse_from(argv)
            .expect("parses")
            .to_config()
    }

    fn config(args: &[&str]) -> Config {
        parse(args).expect("valid").0
    }

    #[test]
    fn defaults_are_fs_mark_defaults() {
        let c = config(&["-d", "x"]);
        assert_eq!(c, Config::new("x"));
        let (_, r) = parse(&["-d", "x"]).unwrap();
        assert_eq!(r.log_file, PathBuf::from("fs_log.txt"));
        assert!(!r.verbose && r.json.is_none() && !r.latency_table);
    }

    #[test]
    fn values_attach_or_separate_and_last_one_wins() {
        let c = config(&["-d", "x", "-S4", "-n", "5", "-n7", "-s4k", "-w", "300"]);
        assert_eq!(c.sync, SyncMethod::SyncPostReverse);
        assert_eq!(c.num_files, 7);
        assert_eq!(c.file_size, 4096);
        assert_eq!(c.io_size, 300);
    }

    #[test]
    fn each_option_sets_its_field() {
        let c = config(&[
            "-d", "a", "-d", "b", "-t", "4", "-p", "20", "-r", "5", "-D", "3", "-N", "4", "-S", "0",
        ]);
        assert_eq!(c.dirs, vec![PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(c.threads, 4);
        assert_eq!((c.name_len, c.rand_len), (20, 5));
        assert_eq!(
            c.subdirs,
            SubdirPolicy::RoundRobin {
                subdirs: 3,
                per_subdir: 4
            }
        );
        assert_eq!(c.sync, SyncMethod::NoSync);
        assert!(!c.keep_files);
        let (_, r) = parse(&["-d", "a", "-v", "-l", "my.log", "--json", "j", "--latency"]).unwrap();
        assert!(r.verbose && r.latency_table);
        assert_eq!(r.log_file, PathBuf::from("my.log"));
        assert_eq!(r.json, Some(PathBuf::from("j")));
    }

    #[test]
    fn minus_d_alone_is_time_hash_and_n_order_does_not_matter() {
        assert_eq!(
            config(&["-d", "a", "-D", "5"]).subdirs,
            SubdirPolicy::TimeHash {
                subdirs: 5,
                secs_per_subdir: 180
            }
        );
        assert_eq!(
            config(&["-d", "a", "-N", "2", "-D", "5"]).subdirs,
            SubdirPolicy::RoundRobin {
                subdirs: 5,
                per_subdir: 2
            }
        );
    }

    #[test]
    fn keep_is_implied_by_loops_and_fill() {
        assert!(config(&["-d", "a", "-k"]).keep_files);
        assert!(config(&["-d", "a", "-L", "2"]).keep_files);
        let c = config(&["-d", "a", "-F"]);
        assert!(c.keep_files && c.fill);
        assert_eq!(config(&["-d", "a", "-L", "0"]).iterations(), 1);
        assert_eq!(config(&["-d", "a", "-L", "3"]).iterations(), 3);
    }

    #[test]
    fn more_dirs_than_threads_raises_the_thread_count() {
        assert_eq!(config(&["-d", "a", "-d", "b", "-d", "c"]).threads, 3);
        assert_eq!(config(&["-d", "a", "-d", "b", "-t", "1"]).threads, 2);
    }

    #[test]
    fn values_fs_mark_cannot_use_sensibly_are_refused() {
        let err = |a: &[&str]| parse(a).unwrap_err();
        assert_eq!(err(&["-d", "a", "-t", "0"]), ConfigError::NoThreads);
        assert_eq!(
            err(&["-d", "a", "-p", "0"]),
            ConfigError::RandomLongerThanName { name: 0, rand: 24 }
        );
        assert_eq!(
            err(&["-d", "a", "-p", "10", "-r", "11"]),
            ConfigError::RandomLongerThanName { name: 10, rand: 11 }
        );
        assert_eq!(err(&["-d", "a", "-r", "0"]), ConfigError::NoRandomBytes);
        assert!(
            err(&["-d", "a", "-p", "0"])
                .to_string()
                .starts_with("-p 0 -r 24: ")
        );
        // The edges that are fine: all random, and one random byte.
        assert_eq!(config(&["-d", "a", "-p", "128", "-r", "128"]).rand_len, 128);
        assert_eq!(config(&["-d", "a", "-r", "1"]).rand_len, 1);
    }

    #[test]
    fn json_or_latency_turns_on_histograms() {
        assert!(!config(&["-d", "a"]).latency);
        assert!(config(&["-d", "a", "--latency"]).latency);
        assert!(config(&["-d", "a", "--json", "f"]).latency);
    }

    #[test]
    fn limits_use_fs_mark_messages() {
        let err = |a: &[&str]| parse(a).unwrap_err().to_string();
        assert_eq!(
            err(&["-k"]),
            "Must specify at least one directory with -d switch"
        );
        assert!(err(&["-d", "a", "-n", "1000001"]).ends_with("Max files is 1000000"));
        assert!(err(&["-d", "a", "-p", "129"]).ends_with("Max filename size is 128"));
        assert!(err(&["-d", "a", "-t", "65"]).ends_with("Max threads is 64"));
        assert!(err(&["-d", "a", "-w", "1048577"]).ends_with("MAX IO buffer size is 1048576"));
        assert!(
            err(&["-d", "a", "-D", "1"]).ends_with("Number of subdirs needs to be greater than 1")
        );
        assert_eq!(
            err(&["-d", "a", "-d", "b", "-t", "3"]),
            "Threads (3) must be an even multiple the number of directories (2) and less than 64"
        );
        assert!(
            err(&["-d", "a", "-N", "3"]).starts_with("Must specify at more than 1 subdirectory")
        );
        assert!(err(&["-d", "a", "-S", "8"]).starts_with("-S 8"));
        assert!(err(&["-d", "a", "-n", "0"]).starts_with("-n 0"));
        assert!(err(&["-d", "a", "-w", "0"]).starts_with("-w 0"));
        assert!(err(&["-d", "a", "-r", "129"]).starts_with("-r 129"));
        let many: Vec<String> = (0..65)
            .flat_map(|i| ["-d".into(), format!("d{i}")])
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(err(&many).ends_with("Max number of threads (and directories) is 64"));
    }

    #[test]
    fn garbage_numbers_are_refused_naming_the_option() {
        let usage_error_line = crate::cli::tool::usage_error_line::<FsmarkArgs>;
        let e = FsmarkArgs::try_parse_from(["fsmark", "-d", "a", "-n", "abc"]).unwrap_err();
        let line = usage_error_line(&e);
        assert!(line.starts_with("invalid value 'abc' for '-n'"), "{line}");
        let e = FsmarkArgs::try_parse_from(["fsmark", "-d", "a", "-n", "-5"]).unwrap_err();
        assert!(usage_error_line(&e).starts_with("invalid value '-5' for '-n'"));
        let e = FsmarkArgs::try_parse_from(["fsmark", "-d", "a", "-s"]).unwrap_err();
        assert!(usage_error_line(&e).contains("'-s'"));
        assert!(FsmarkArgs::try_parse_from(["fsmark", "-d", "a", "-s", "4q"]).is_err());
        assert!(FsmarkArgs::try_parse_from(["fsmark", "-d", "a", "-t-1"]).is_err());
    }
}
