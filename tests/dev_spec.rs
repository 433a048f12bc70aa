//! The `--device` spec: canonical round trips and every error message.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use fslab::backend::open::BackendConfig;
use fslab::cli::backend_args::BackendArgs;
use fslab::fs::dev::LatencyParams;
use fslab::fs::dev::spec::{DeviceSpec, FileSpec, MemSpec, MemberSpec, SpecError, StripeSpec};

fn parse(s: &str) -> Result<DeviceSpec, SpecError> {
    s.parse()
}

#[test]
fn specs_print_canonically_and_parse_back_to_the_same_value() {
    let cases = [
        ("mem", "mem:1g"),
        (" mem:1GiB ", "mem:1g"),
        ("mem:1.5g", "mem:1536m"),
        ("mem:1049088", "mem:1049088"),
        (
            "mem:4g,lat=20us,bw=2g,flush=100us",
            "mem:4g,lat=20us,bw=2g,flush=100us",
        ),
        ("mem,bw=2g/s,flush=0.5ms", "mem:1g,bw=2g,flush=500us"),
        ("mem:1536k,flush=2ms,lat=0", "mem:1536k,flush=2ms"),
        (
            "file:/var/tmp/lab.img,size=8g",
            "file:/var/tmp/lab.img,size=8g",
        ),
        (
            "file:/dev/sdb,lat=1ms,direct",
            "file:/dev/sdb,direct,lat=1ms",
        ),
        (r"file:/a\,b\\c,size=1m", r"file:/a\,b\\c,size=1m"),
        ("stripe:6,mem:1g", "stripe:6,su=64k,mem:1g"),
        ("stripe:6,su=64k,mem:1g", "stripe:6,su=64k,mem:1g"),
        ("stripe:1,mem:8m", "stripe:1,su=64k,mem:8m"),
        (
            "stripe:2,file:/a.img,file:/b.img",
            "stripe:2,su=64k,file:/a.img,file:/b.img",
        ),
        (
            "stripe:4,su=1m,mem:1g,lat=50us,bw=500m",
            "stripe:4,su=1m,mem:1g,lat=50us,bw=500m",
        ),
        (
            "stripe:2,mem:1g,mem:2g,lat=1us",
            "stripe:2,su=64k,mem:1g,mem:2g,lat=1us",
        ),
        (
            "stripe:2,mem:1g,lat=1us,mem:1g,lat=1us",
            "stripe:2,su=64k,mem:1g,lat=1us",
        ),
    ];
    for (input, canonical) in cases {
        let spec = parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(spec.to_string(), canonical, "{input}");
        assert_eq!(parse(canonical).as_ref(), Ok(&spec), "{canonical}");
    }
}

#[test]
fn parsed_values_are_the_ones_written() {
    assert_eq!(
        parse("mem:4g,lat=20us,bw=2g,flush=100us"),
        Ok(DeviceSpec::Mem(MemSpec {
            size: 4 << 30,
            latency: LatencyParams {
                lat: Duration::from_micros(20),
                bw: Some(2 << 30),
                flush: Duration::from_micros(100),
            },
        }))
    );
    assert_eq!(
        parse(r"file:/x\,y,size=1m,direct"),
        Ok(DeviceSpec::File(FileSpec {
            path: PathBuf::from("/x,y"),
            size: Some(1 << 20),
            direct: true,
            latency: LatencyParams::NONE,
        }))
    );
    let Ok(DeviceSpec::Stripe(s)) = parse("stripe:3,su=128k,mem:2m,flush=1ms") else {
        panic!("stripe spec did not parse");
    };
    assert_eq!(s.su, 128 << 10);
    assert_eq!(s.members.len(), 3);
    assert!(s.members.iter().all(|m| matches!(
        m,
        MemberSpec::Mem(MemSpec { size, latency }) if *size == 2 << 20
            && latency.flush == Duration::from_millis(1)
    )));
}

#[test]
fn constructed_specs_round_trip_through_display() {
    let sizes = [1u64 << 20, (1 << 20) + 512, 1 << 30, 3 << 29, 5 << 40];
    let durations = [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_nanos(999),
        Duration::from_micros(1500),
        Duration::from_secs(2),
    ];
    let rates = [None, Some(1u64), Some(1536), Some(2 << 30)];
    let mut n = 0;
    for (i, &size) in sizes.iter().enumerate() {
        for (j, &lat) in durations.iter().enumerate() {
            for &bw in &rates {
                let latency = LatencyParams {
                    lat,
                    bw,
                    flush: durations[(i + j) % durations.len()],
                };
                let mem = MemSpec { size, latency };
                let file = FileSpec {
                    path: PathBuf::from(format!(r"/tmp/dir,{i}\x {j}.img")),
                    size: (j % 2 == 0).then_some(size),
                    direct: i % 2 == 1,
                    latency,
                };
                let specs = [
                    DeviceSpec::Mem(mem.clone()),
                    DeviceSpec::File(file.clone()),
                    DeviceSpec::Stripe(StripeSpec {
                        su: 512 << (i % 4),
                        members: vec![MemberSpec::Mem(mem.clone()); i + 1],
                    }),
                    DeviceSpec::Stripe(StripeSpec {
                        su: 65536,
                        members: vec![MemberSpec::File(file.clone()), MemberSpec::Mem(mem)],
                    }),
                ];
                for spec in specs {
                    let text = spec.to_string();
                    assert_eq!(parse(&text), Ok(spec), "{text}");
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, 5 * 5 * 4 * 4);
}

#[test]
fn every_error_names_the_bad_part() {
    let cases: &[(&str, &str)] = &[
        (
            "",
            "empty device spec (expected e.g. mem:1g, file:PATH or stripe:N,...)",
        ),
        (
            "foo",
            "unknown device kind 'foo' (expected mem, file, stripe)",
        ),
        (
            "foo:1g",
            "unknown device kind 'foo' (expected mem, file, stripe)",
        ),
        (
            "lat=20us",
            "unknown device kind 'lat=20us' (expected mem, file, stripe)",
        ),
        (
            "mem:1x",
            "bad size '1x' in 'mem:1x': unknown unit 'x' in '1x'",
        ),
        ("mem:", "bad size '' in 'mem:': empty value"),
        (
            "mem:1000",
            "bad size '1000' in 'mem:1000': not a multiple of 512",
        ),
        (
            "mem:1k",
            "bad size '1k' in 'mem:1k': smaller than the 1MiB labfs needs",
        ),
        (
            "mem:4k",
            "bad size '4k' in 'mem:4k': smaller than the 1MiB labfs needs",
        ),
        (
            "file:/x.img,size=512k",
            "bad size '512k' in 'size=512k': smaller than the 1MiB labfs needs",
        ),
        (
            "stripe:2,mem:2k",
            "bad size '2k' in 'mem:2k': smaller than the 4KiB minimum of a stripe member",
        ),
        (
            "stripe:4,mem:128k",
            "'stripe:4,mem:128k' holds 512KiB, less than the 1MiB labfs needs (N x the smallest member, in whole stripe units)",
        ),
        (
            "mem:32t",
            "bad size '32t' in 'mem:32t': larger than the 16TiB a mem device can hold",
        ),
        (
            "mem,lat=fast",
            "bad duration 'fast' in 'lat=fast': 'fast' is not a number",
        ),
        (
            "mem,flush=3 weeks",
            "bad duration '3 weeks' in 'flush=3 weeks': unknown unit 'weeks' in '3 weeks'",
        ),
        (
            "mem,bw=0",
            "bad rate '0' in 'bw=0': must be greater than zero",
        ),
        (
            "mem,bw=2q",
            "bad rate '2q' in 'bw=2q': unknown unit 'q' in '2q'",
        ),
        (
            "mem,size=1g",
            "unknown option 'size' in 'size=1g' (expected lat, bw, flush; the size goes in mem:SIZE)",
        ),
        (
            "mem,lat=1us,lat=2us",
            "option 'lat' given twice (again in 'lat=2us')",
        ),
        ("mem,lat", "option 'lat' needs a value, e.g. 'lat=20us'"),
        ("mem,bw", "option 'bw' needs a value, e.g. 'bw=2g'"),
        (
            "mem,flush",
            "option 'flush' needs a value, e.g. 'flush=100us'",
        ),
        (
            "mem,,lat=1us",
            "empty item in 'mem,,lat=1us' (two commas in a row, or a comma at the end)",
        ),
        (
            "mem,",
            "empty item in 'mem,' (two commas in a row, or a comma at the end)",
        ),
        (
            ",mem",
            "empty item in ',mem' (two commas in a row, or a comma at the end)",
        ),
        ("file", "missing path in 'file' (expected file:PATH)"),
        ("file:", "missing path in 'file:' (expected file:PATH)"),
        (
            "file:/x,direct=1",
            "option 'direct' takes no value (in 'direct=1')",
        ),
        (
            "file:/x,direct,direct",
            "option 'direct' given twice (again in 'direct')",
        ),
        (
            "file:/x,size",
            "option 'size' needs a value, e.g. 'size=8g'",
        ),
        (
            "file:/x,size=1000",
            "bad size '1000' in 'size=1000': not a multiple of 512",
        ),
        (
            "file:/x,size=1g,size=2g",
            "option 'size' given twice (again in 'size=2g')",
        ),
        (
            "file:/x,bogus",
            "unknown option 'bogus' in 'bogus' (expected size, direct, lat, bw, flush)",
        ),
        (
            r"file:/x\",
            r"'file:/x\' ends with a lone '\' (in a path write ',' as '\,' and '\' as '\\')",
        ),
        (
            "mem:1g,file:/x",
            "extra device 'file:/x' (several devices only go inside stripe:N,...)",
        ),
        (
            "mem:1g,stripe:2",
            "extra device 'stripe:2' (several devices only go inside stripe:N,...)",
        ),
        (
            "stripe",
            "missing stripe count in 'stripe' (expected stripe:N,...)",
        ),
        (
            "stripe:",
            "missing stripe count in 'stripe:' (expected stripe:N,...)",
        ),
        (
            "stripe:x,mem",
            "bad stripe count 'x' in 'stripe:x': not a whole number",
        ),
        (
            "stripe:-1,mem",
            "bad stripe count '-1' in 'stripe:-1': not a whole number",
        ),
        (
            "stripe:0,mem",
            "bad stripe count '0' in 'stripe:0': a stripe needs at least 1 member",
        ),
        (
            "stripe:300,mem",
            "bad stripe count '300' in 'stripe:300': at most 256 members",
        ),
        (
            "stripe:2",
            "'stripe:2' has no member device (expected e.g. stripe:2,mem:1g)",
        ),
        (
            "stripe:2,su=64k",
            "'stripe:2' has no member device (expected e.g. stripe:2,mem:1g)",
        ),
        (
            "stripe:3,mem:1g,mem:1g",
            "stripe:3 lists 2 member devices (give one to repeat 3 times, or exactly 3)",
        ),
        (
            "stripe:2,stripe:2,mem",
            "a stripe member cannot be a stripe ('stripe:2')",
        ),
        (
            "stripe:2,mem,stripe:1,mem",
            "a stripe member cannot be a stripe ('stripe:1')",
        ),
        (
            "stripe:2,file:/a",
            "stripe members 1 and 2 are the same file '/a'",
        ),
        (
            "stripe:3,file:/a,file:/b,file:/a",
            "stripe members 1 and 3 are the same file '/a'",
        ),
        (
            "stripe:2,lat=20us,mem:1g",
            "latency option 'lat=20us' must follow a stripe member, not the stripe (e.g. stripe:2,mem:1g,lat=20us): each member has its own queue",
        ),
        (
            "stripe:2,mem:1g,su=64k",
            "stripe option 'su=64k' must come before the first member (e.g. stripe:2,su=64k,mem:1g)",
        ),
        (
            "stripe:2,file:/a,su=64k,file:/b",
            "stripe option 'su=64k' must come before the first member (e.g. stripe:2,su=64k,mem:1g)",
        ),
        (
            "stripe:2,su=1000,mem",
            "bad size '1000' in 'su=1000': a stripe unit must be a positive multiple of 512",
        ),
        (
            "stripe:2,su=0,mem",
            "bad size '0' in 'su=0': a stripe unit must be a positive multiple of 512",
        ),
        (
            "stripe:2,su=64k,su=32k,mem",
            "option 'su' given twice (again in 'su=32k')",
        ),
        (
            "stripe:2,su,mem",
            "option 'su' needs a value, e.g. 'su=64k'",
        ),
        (
            "stripe:2,foo=1,mem",
            "unknown option 'foo' in 'foo=1' (expected su before the members)",
        ),
        (
            "stripe:2,mem:1x",
            "bad size '1x' in 'mem:1x': unknown unit 'x' in '1x'",
        ),
    ];
    for (input, message) in cases {
        match parse(input) {
            Ok(spec) => panic!("'{input}' parsed as {spec:?}, expected: {message}"),
            Err(e) => {
                let text = e.to_string();
                assert_eq!(&text, message, "for '{input}'");
                assert!(!text.contains('\n'), "one line: {text}");
            }
        }
    }
}

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    backend: BackendArgs,
}

fn device_of(args: &[&str]) -> DeviceSpec {
    let argv = std::iter::once("prog").chain(args.iter().copied());
    let cli = Cli::try_parse_from(argv).expect("valid");
    match cli.backend.to_config().expect("labfs") {
        BackendConfig::Lab(lab) => lab.device,
        BackendConfig::Host => panic!("--fs lab is the default"),
    }
}

#[test]
fn device_flag_defaults_to_mem_and_reports_spec_errors() {
    assert_eq!(device_of(&[]), DeviceSpec::default());
    assert_eq!(
        device_of(&["--device", "stripe:2,mem:1m"]).to_string(),
        "stripe:2,su=64k,mem:1m"
    );
    let err = Cli::try_parse_from(["prog", "--device", "mem:1x"]).expect_err("bad size");
    assert!(
        err.to_string()
            .contains("bad size '1x' in 'mem:1x': unknown unit 'x' in '1x'"),
        "{err}"
    );
}

#[test]
fn help_text_examples_all_parse() {
    let help = fslab::fs::dev::spec::DEVICE_HELP;
    let examples: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Examples:"))
        .skip(1)
        .map(str::trim)
        .collect();
    assert_eq!(examples.len(), 4);
    for ex in examples {
        assert!(parse(ex).is_ok(), "{ex}");
    }
}
