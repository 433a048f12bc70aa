//! fs_mark 3.3's real output, captured from the C tool (see shared/reference/captures).
//! Kept as escaped literals so tabs and the argv line's trailing space stay visible.

/// `fs_mark_basic_stdout.txt`.
pub const BASIC_STDOUT: &str = concat!(
    "\n",
    "#  fs_mark  -d  /mnt/test/d1  -s  4096  -n  20 \n",
    "#\tVersion 3.3, 1 thread(s) starting at Mon Nov 30 06:35:36 2026\n",
    "#\tSync method: INBAND FSYNC: fsync() per file in write loop.\n",
    "#\tDirectories:  no subdirectories used\n",
    "#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)\n",
    "#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write\n",
    "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
    "\n",
    "FSUse%        Count         Size    Files/sec     App Overhead\n",
    "    68           20         4096       1664.2              134\n",
    "Average Files/sec:       1664.0\n",
    "p50 Files/sec: 1664\n",
    "p90 Files/sec: 1664\n",
    "p99 Files/sec: 1664\n",
);

/// `fs_mark_verbose_4thr_stdout.txt`.
pub const VERBOSE_4THR_STDOUT: &str = concat!(
    "\n",
    "#  fs_mark  -d  /mnt/test/d1  -d  /mnt/test/d2  -t  4  -s  1000  -w  300  -n  10  -D  3  -N  4  -k  -L  2  -v  -S  3  -l  /mnt/test/my.log \n",
    "#\tVersion 3.3, 4 thread(s) starting at Mon Nov 30 06:35:38 2026\n",
    "#\tSync method: POST REVERSE: Reopen and fsync() each file in reverse order after main write loop.\n",
    "#\tDirectories:  Round Robin between directories across 3 subdirectories with 4 files per subdirectory.\n",
    "#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)\n",
    "#\tFiles info: size 1000 bytes, written with an IO size of 300 bytes per write\n",
    "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
    "#\tAll system call times are reported in microseconds.\n",
    "\n",
    "FSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)\n",
    "    68           40         1000       8159.3              716       48       61      207        0        1       31      190      420     2423        0        0        0        1        1        3        0        0        0\n",
    "    68           80         1000       8356.6              306       48       60      130        0        2       18      162      412     2472        0        0        0        1        1        3        0        0        0\n",
    "Average Files/sec:       8257.5\n",
    "p50 Files/sec: 8159\n",
    "p90 Files/sec: 8159\n",
    "p99 Files/sec: 8159\n",
);

/// `fs_mark_L2_verbose_stdout.txt`.
pub const L2_VERBOSE_STDOUT: &str = concat!(
    "\n",
    "#  fs_mark  -d  /mnt/test/d1  -s  4096  -n  20  -L  2  -v  -l  captures/fs_mark_log_verbose.txt \n",
    "#\tVersion 3.3, 1 thread(s) starting at Mon Nov 30 06:39:41 2026\n",
    "#\tSync method: INBAND FSYNC: fsync() per file in write loop.\n",
    "#\tDirectories:  no subdirectories used\n",
    "#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)\n",
    "#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write\n",
    "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
    "#\tAll system call times are reported in microseconds.\n",
    "\n",
    "FSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)\n",
    "    68           20         4096       3508.8              179       25       28       33        9       23       31      170      220      468        0        0        0        3        3        6        0        0        0\n",
    "    68           40         4096       3607.5              176       26       29       36        9        9       15      188      225      311        0        0        0        2        3        6        0        0        0\n",
    "Average Files/sec:       3557.5\n",
    "p50 Files/sec: 3508\n",
    "p90 Files/sec: 3508\n",
    "p99 Files/sec: 3508\n",
);

/// `fs_mark_log_verbose.txt`.
pub const L2_VERBOSE_LOG: &str = concat!(
    "\n",
    "#  fs_mark  -d  /mnt/test/d1  -s  4096  -n  20  -L  2  -v  -l  captures/fs_mark_log_verbose.txt \n",
    "#\tVersion 3.3, 1 thread(s) starting at Mon Nov 30 06:39:41 2026\n",
    "#\tSync method: INBAND FSYNC: fsync() per file in write loop.\n",
    "#\tDirectories:  no subdirectories used\n",
    "#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)\n",
    "#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write\n",
    "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
    "##\tAll system call times are reported in microseconds.\n",
    "\n",
    "FSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)\n",
    "    68           20         4096       3508.8              179       25       28       33        9       23       31      170      220      468        0        0        0        3        3        6        0        0        0\n",
    "    68           40         4096       3607.5              176       26       29       36        9        9       15      188      225      311        0        0        0        2        3        6        0        0        0\n",
);
