//! From a command line and job files to the numbered jobs fio would run.
//!
//! fio keeps one template job (`def_thread`): options before the first `--name`, and every
//! `[global]` section (of any file, in order), change it; each job starts as a copy of the
//! template at the point it is defined. Command-line jobs come first, then each job file's;
//! the first job of every job file after the first gets an implicit `stonewall`.
//!
//! Reporting groups follow fio's `add_job`: a job with `stonewall` or `new_group` opens a new
//! group when the current one already has jobs. Clones (`numjobs`) get consecutive thread
//! numbers right after their parent, which fio uses in log file names.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::cmdline::{CmdItem, CommandLine};
use super::job::{JobError, JobSpec};
use super::jobfile::{self, Env, JobFileError, Keywords, ReadOptions, Source};
use super::options::{self, OptionError};

/// A job ready to run: its options, reporting group and first thread number.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The options.
    pub spec: JobSpec,
    /// Its reporting group.
    pub groupid: u32,
    /// fio's thread number of its first clone (1-based; clones follow).
    pub first_thread_number: u32,
    /// Whether it waits for every earlier job to finish before starting.
    pub waits_for_previous: bool,
}

/// Every job of a run, and the options of the template (JSON "global options").
#[derive(Debug, Clone, PartialEq)]
pub struct JobSet {
    /// The jobs in fio's order.
    pub jobs: Vec<Job>,
    /// The options given to the template, in order.
    pub global_options: Vec<(String, Option<String>)>,
}

impl JobSet {
    /// Number of reporting groups.
    pub fn groups(&self) -> u32 {
        self.jobs.iter().map(|j| j.groupid + 1).max().unwrap_or(0)
    }

    /// Total number of job clones (threads).
    pub fn clones(&self) -> u32 {
        self.jobs.iter().map(|j| j.spec.numjobs).sum()
    }
}

/// Why the jobs could not be built.
#[derive(Debug, Error)]
pub enum JobSetError {
    /// A job file could not be read.
    #[error("{0}")]
    File(#[from] JobFileError),
    /// An option of a job was refused (fio then drops the job).
    #[error("{source}\nfio: job {job} dropped")]
    Option {
        /// The job (or `global`).
        job: String,
        /// The refusal.
        source: OptionError,
    },
    /// A job's options do not go together.
    #[error("{0}")]
    Job(#[from] JobError),
    /// Nothing to run.
    #[error("No job(s) defined")]
    NoJobs,
}

/// How job files are read.
pub trait JobFileReader {
    /// The text of a job file (`-` is stdin) and the directory relative includes resolve in.
    fn read(&self, path: &str) -> Result<(String, Option<PathBuf>), JobFileError>;
}

/// Job files from the filesystem (and stdin for `-`).
#[derive(Debug, Clone, Copy, Default)]
pub struct FsReader;

impl JobFileReader for FsReader {
    fn read(&self, path: &str) -> Result<(String, Option<PathBuf>), JobFileError> {
        let open_err = |source| JobFileError::Open {
            path: path.to_string(),
            source,
        };
        if path == "-" {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(open_err)?;
            return Ok((s, None));
        }
        let text = std::fs::read_to_string(path).map_err(open_err)?;
        let dir = Path::new(path).parent().map(Path::to_path_buf);
        Ok((text, dir))
    }
}

struct Builder {
    template: JobSpec,
    jobs: Vec<Job>,
    groupid: u32,
    jobs_in_group: u32,
    next_thread: u32,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            template: JobSpec::default(),
            jobs: Vec::new(),
            groupid: 0,
            jobs_in_group: 0,
            next_thread: 1,
        }
    }

    fn new_job(&self, name: &str) -> JobSpec {
        let mut spec = self.template.clone();
        spec.given.clear();
        spec.name = name.to_string();
        spec
    }

    fn apply(spec: &mut JobSpec, job: &str, line: &str) -> Result<(), JobSetError> {
        options::apply_option(spec, line).map_err(|source| JobSetError::Option {
            job: job.to_string(),
            source,
        })
    }

    fn add(&mut self, mut spec: JobSpec, implicit_stonewall: bool) -> Result<(), JobSetError> {
        if spec.name.is_empty() {
            spec.name = "fio".to_string();
        }
        if implicit_stonewall {
            spec.stonewall = true;
        }
        spec.check()?;
        if (spec.stonewall || spec.new_group) && self.jobs_in_group > 0 {
            self.groupid += 1;
            self.jobs_in_group = 0;
        }
        self.jobs_in_group += spec.numjobs;
        let first = self.next_thread;
        self.next_thread += spec.numjobs;
        let waits = spec.stonewall && !self.jobs.is_empty();
        self.jobs.push(Job {
            spec,
            groupid: self.groupid,
            first_thread_number: first,
            waits_for_previous: waits,
        });
        Ok(())
    }
}

/// Build the jobs of a command line and its job files.
pub fn build(
    cl: &CommandLine,
    reader: &dyn JobFileReader,
    env: &dyn Env,
    keywords: Keywords,
) -> Result<JobSet, JobSetError> {
    let mut b = Builder::new();
    let sections = &cl.switches.sections;
    let skipped = |name: &str| {
        !sections.is_empty() && !name.starts_with("global") && !sections.iter().any(|s| s == name)
    };
    // The job being defined on the command line; None means the template.
    let mut current: Option<JobSpec> = None;
    for item in &cl.items {
        match item {
            CmdItem::Name(name) => {
                if let Some(done) = current.take() {
                    b.add(done, false)?;
                }
                if skipped(name) {
                    // fio then files the skipped job's options under the defaults.
                    continue;
                }
                let line = format!("name={name}");
                if name.starts_with("global") {
                    Builder::apply(&mut b.template, "global", &line)?;
                } else {
                    let mut spec = b.new_job(name);
                    Builder::apply(&mut spec, name, &line)?;
                    current = Some(spec);
                }
            }
            CmdItem::Option(line) => {
                let line = jobfile::substitute(line, env, &keywords)?;
                match current.as_mut() {
                    Some(spec) => {
                        let job = spec.name.clone();
                        Builder::apply(spec, &job, &line)?;
                    }
                    None => Builder::apply(&mut b.template, "global", &line)?,
                }
            }
        }
    }
    if let Some(done) = current.take() {
        b.add(done, false)?;
    }
    for (index, path) in cl.job_files.iter().enumerate() {
        let (text, dir) = reader.read(path)?;
        let opts = ReadOptions {
            sections,
            env,
            keywords,
        };
        let raw = jobfile::parse_job_text(
            &Source {
                name: path,
                dir: dir.as_deref(),
                text: &text,
            },
            &opts,
        )?;
        let mut stonewall_pending = index > 0;
        for section in raw {
            let mut lines = section.lines.clone();
            options::sort_by_priority(&mut lines);
            if section.global {
                for line in &lines {
                    Builder::apply(&mut b.template, &section.name, line)?;
                }
                continue;
            }
            let mut spec = b.new_job(&section.name);
            for line in &lines {
                Builder::apply(&mut spec, &section.name, line)?;
            }
            b.add(spec, stonewall_pending)?;
            stonewall_pending = false;
        }
    }
    if b.jobs.is_empty() {
        return Err(JobSetError::NoJobs);
    }
    Ok(JobSet {
        jobs: b.jobs,
        global_options: b.template.given,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio::cmdline;
    use crate::workload::fio::jobfile::VarList;
    use std::collections::HashMap;

    struct MapReader(HashMap<&'static str, &'static str>);

    impl JobFileReader for MapReader {
        fn read(&self, path: &str) -> Result<(String, Option<PathBuf>), JobFileError> {
            self.0
                .get(path)
                .map(|t| (t.to_string(), None))
                .ok_or_else(|| JobFileError::Open {
                    path: path.to_string(),
                    source: std::io::Error::from(std::io::ErrorKind::NotFound),
                })
        }
    }

    const KW: Keywords = Keywords {
        pagesize: 4096,
        mb_memory: 1024,
        ncpus: 2,
    };

    fn build_args(args: &[&str], files: &[(&'static str, &'static str)]) -> JobSet {
        try_build(args, files).unwrap()
    }

    fn try_build(
        args: &[&str],
        files: &[(&'static str, &'static str)],
    ) -> Result<JobSet, JobSetError> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let cl = cmdline::parse(&args).unwrap();
        let reader = MapReader(files.iter().copied().collect());
        build(&cl, &reader, &VarList(&[]), KW)
    }

    const TWO_GROUPS: &str = "[global]\nioengine=psync\n[a]\nrw=write\nsize=1m\n[b]\nstonewall\nrw=read\nsize=2m\n[c]\nthread\nrw=randwrite\nsize=512k\n";

    #[test]
    fn stonewall_opens_a_group_and_globals_are_listed_once() {
        let s = build_args(&["two.fio"], &[("two.fio", TWO_GROUPS)]);
        let groups: Vec<u32> = s.jobs.iter().map(|j| j.groupid).collect();
        assert_eq!(groups, vec![0, 1, 1]);
        assert_eq!(
            s.global_options,
            vec![("ioengine".to_string(), Some("psync".to_string()))]
        );
        assert!(s.jobs[1].waits_for_previous && !s.jobs[2].waits_for_previous);
        assert_eq!(
            s.jobs[2].spec.given.len(),
            3,
            "only the section's own options"
        );
    }

    #[test]
    fn command_line_defaults_apply_to_file_jobs_but_file_settings_win() {
        let f = "[j]\nsize=1m\nfdatasync=8\n";
        let s = build_args(&["f.fio", "--bs=16k", "--fdatasync=0"], &[("f.fio", f)]);
        assert_eq!(s.jobs[0].spec.bs[1], 16384);
        assert_eq!(s.jobs[0].spec.fdatasync, 8);
        assert_eq!(s.global_options.len(), 2);
    }

    #[test]
    fn clones_get_consecutive_thread_numbers_and_files_add_stonewalls() {
        let s = build_args(
            &["--name=x", "--numjobs=3", "--size=1m", "a.fio", "b.fio"],
            &[("a.fio", "[a]\nsize=1m\n"), ("b.fio", "[b]\nsize=1m\n")],
        );
        let numbers: Vec<u32> = s.jobs.iter().map(|j| j.first_thread_number).collect();
        assert_eq!(numbers, vec![1, 4, 5]);
        let groups: Vec<u32> = s.jobs.iter().map(|j| j.groupid).collect();
        assert_eq!(groups, vec![0, 0, 1], "the second file is stonewalled");
        assert_eq!(s.clones(), 5);
        assert_eq!(s.jobs[0].spec.given[0].0, "name");
    }

    #[test]
    fn a_bad_option_drops_the_job_with_fios_words() {
        let e = try_build(&["f.fio"], &[("f.fio", "[j]\nfsycn=1\n")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Bad option <fsycn=1>\nDid you mean fsync?\nfio: job j dropped"
        );
        let e = try_build(&[], &[]).unwrap_err();
        assert!(matches!(e, JobSetError::NoJobs));
        let e = try_build(&["nope.fio"], &[]).unwrap_err();
        assert!(e.to_string().contains("unable to open 'nope.fio'"), "{e}");
    }

    #[test]
    fn sections_filter_jobs() {
        let s = build_args(&["--section=c", "two.fio"], &[("two.fio", TWO_GROUPS)]);
        assert_eq!(s.jobs.len(), 1);
        assert_eq!(s.jobs[0].spec.name, "c");
        assert_eq!(s.jobs[0].spec.ioengine.name(), "psync");
    }
}
