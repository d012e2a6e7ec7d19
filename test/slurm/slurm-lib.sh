#!/bin/bash
# slurm-lib.sh: a real single-node Slurm cluster for the tests, started and stopped by the test
# itself. slurm_start DIR writes DIR/slurm.conf (this host, its CPUs, its memory less a margin,
# memory enforced by task/cgroup with ConstrainRAMSpace on cgroup v1, job completions written by
# jobcomp/filetxt), starts munged as the munge user on its own socket, then slurmctld and slurmd,
# and waits until sinfo shows the node idle. slurm_stop stops them by PID. Nothing is installed
# or changed outside DIR, except /run/munge's owner when it has to be created.
#
# With SLURM_ACCOUNTING=1, slurm_start first starts accounting: Debian's MariaDB (mariadbd on
# its own data directory, socket and port under DIR/db, never the system service) and slurmdbd
# against it (DIR/slurmdbd.conf, mode 600), creates the cluster, an account and this user with
# sacctmgr -i, and writes slurm.conf with AccountingStorageType=accounting_storage/slurmdbd, so
# sacct answers with each job's state, exit code, CPU time and MaxRSS (sampled every second).
# slurm_accounting_off restarts slurmctld and slurmd without accounting (slurmdbd and MariaDB
# are stopped), for the cases that test a cluster without it.
#
# After slurm_start: SLURM_CONF is exported (every Slurm client command needs it), SLURM_DIR is
# DIR, SLURM_NODE the node name. slurm_start returns 1 (with the reason on stderr) when a part
# cannot start; the caller decides whether that is a skip or (under CI) a failure.

SLURM_DIR=
SLURM_NODE=$(hostname)
SLURM_ACCOUNTING=${SLURM_ACCOUNTING:-0}
SLURM_DB_PORT=${SLURM_DB_PORT:-16820}
SLURM_DBD_PORT=${SLURM_DBD_PORT:-16819}

# __slurm_pid FILE: the PID written in FILE, or nothing.
__slurm_pid() {
	[ -s "$1" ] && tr -dc '0-9' <"$1"
}

# __slurm_wait SECONDS CMD...: CMD until it succeeds, at most SECONDS.
__slurm_wait() {
	local limit=$1
	shift
	local deadline=$((SECONDS + limit))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

__slurm_node_idle() {
	sinfo -h -N -o '%T' 2>/dev/null | grep -qx 'idle'
}

# __slurm_acct_conf: the accounting lines of slurm.conf.
__slurm_acct_conf() {
	if [ "$SLURM_ACCOUNTING" = 1 ]; then
		printf 'AccountingStorageType=accounting_storage/slurmdbd\n'
		printf 'AccountingStorageHost=%s\nAccountingStoragePort=%s\n' "$SLURM_NODE" "$SLURM_DBD_PORT"
		# for slurmdbd connections this is the munge socket (slurm.conf(5))
		printf 'AccountingStoragePass=%s/munge/munge.socket\n' "$SLURM_DIR"
	else
		printf 'AccountingStorageType=accounting_storage/none\n'
	fi
}

# __slurm_db_sql SQL: runs SQL as MariaDB's root on the test server's socket.
__slurm_db_sql() {
	mariadb --no-defaults --socket="$SLURM_DIR/db/mariadb.sock" -u root -e "$1"
}

# __slurm_db_start DIR: a MariaDB server of its own under DIR/db (data, socket, PID file, log),
# listening on 127.0.0.1:SLURM_DB_PORT, with a user slurm for slurmdbd.
__slurm_db_start() {
	local d=$1
	mkdir -p "$d/db/data"
	chown -R mysql:mysql "$d/db"
	mariadb-install-db --no-defaults --datadir="$d/db/data" --user=mysql --skip-test-db \
		--auth-root-authentication-method=socket >"$d/db/install.log" 2>&1 || {
		echo "slurm-lib: mariadb-install-db failed:" >&2
		tail -n 5 "$d/db/install.log" >&2
		return 1
	}
	# in a subshell, so that the caller's shell does not wait for it
	(mariadbd --no-defaults --datadir="$d/db/data" --user=mysql \
		--socket="$d/db/mariadb.sock" --pid-file="$d/db/mariadbd.pid" \
		--port="$SLURM_DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve --skip-log-bin \
		--innodb-buffer-pool-size=64M --innodb-log-file-size=16M \
		--log-error="$d/db/mariadbd.log" </dev/null >/dev/null 2>&1 &)
	if ! __slurm_wait 60 __slurm_db_sql 'SELECT 1'; then
		echo "slurm-lib: MariaDB did not answer within 60 s:" >&2
		tail -n 5 "$d/db/mariadbd.log" >&2
		return 1
	fi
	__slurm_db_sql "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'htc-test';
		GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" || {
		echo "slurm-lib: cannot create the slurm user in MariaDB" >&2
		return 1
	}
}

__slurm_dbd_answers() {
	sacctmgr -n -P show cluster
}

# __slurm_dbd_start DIR: slurmdbd on SLURM_DBD_PORT against the test MariaDB, then the cluster,
# an account and this user in it (sacctmgr needs SLURM_CONF, written before).
__slurm_dbd_start() {
	local d=$1
	(
		umask 077
		cat >"$d/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
DbdHost=$SLURM_NODE
DbdPort=$SLURM_DBD_PORT
SlurmUser=root
PidFile=$d/slurmdbd.pid
LogFile=$d/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$SLURM_DB_PORT
StorageUser=slurm
StoragePass=htc-test
StorageLoc=slurm_acct_db
CONF
	)
	# slurmdbd refuses a configuration others can read, or that its SlurmUser does not own
	chown root:root "$d/slurmdbd.conf"
	chmod 600 "$d/slurmdbd.conf"
	SLURM_CONF=$d/slurmdbd.conf slurmdbd || {
		echo "slurm-lib: slurmdbd did not start:" >&2
		tail -n 5 "$d/slurmdbd.log" >&2
		return 1
	}
	if ! __slurm_wait 60 __slurm_dbd_answers; then
		echo "slurm-lib: slurmdbd did not answer within 60 s:" >&2
		tail -n 5 "$d/slurmdbd.log" >&2
		return 1
	fi
	sacctmgr -i add cluster htctest >/dev/null &&
		sacctmgr -i add account htc Description=tests Organization=htc >/dev/null &&
		sacctmgr -i add user "$(id -un)" Account=htc DefaultAccount=htc >/dev/null || {
		echo "slurm-lib: sacctmgr could not create the cluster, account and user" >&2
		return 1
	}
}

# slurm_write_conf DIR: writes DIR/slurm.conf and DIR/cgroup.conf.
slurm_write_conf() {
	local d=$1 cpus mem
	cpus=$(nproc)
	# RealMemory: what the machine has, less 1 GB (or a quarter when small) for the system.
	mem=$(awk '/^MemTotal:/ { m = int($2 / 1024); r = m - 1024; if (r < m * 3 / 4) r = int(m * 3 / 4); print r }' /proc/meminfo)
	cat >"$d/slurm.conf" <<CONF
ClusterName=htctest
SlurmctldHost=$SLURM_NODE
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmctldPort=${SLURM_CTLD_PORT:-16817}
SlurmdPort=${SLURM_D_PORT:-16818}
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmdSpoolDir=$d/spool
StateSaveLocation=$d/state
TmpFS=$d/tmp
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=1
JobCompType=jobcomp/filetxt
JobCompLoc=$d/jobcomp.txt
$(__slurm_acct_conf)
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
SchedulerParameters=sched_interval=1
KillWait=2
MinJobAge=600
DefMemPerCPU=1024
InactiveLimit=0
MpiDefault=none
NodeName=$SLURM_NODE CPUs=$cpus RealMemory=$mem TmpDisk=1024 State=UNKNOWN
PartitionName=debug Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
	cat >"$d/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
AllowedSwapSpace=0
CONF
}

# slurm_start DIR: see the top of the file.
slurm_start() {
	local d=$1
	SLURM_DIR=$d
	local need="munged slurmctld slurmd sbatch squeue sinfo scancel"
	[ "$SLURM_ACCOUNTING" = 1 ] && need="$need slurmdbd sacct sacctmgr mariadbd mariadb-install-db mariadb"
	for b in $need; do
		command -v $b >/dev/null || {
			echo "slurm-lib: $b is missing (bash test/install-deps.sh test)" >&2
			return 1
		}
	done
	[ "$(id -u)" = 0 ] || {
		echo "slurm-lib: slurmd and munged need root here" >&2
		return 1
	}
	mkdir -p "$d/munge" "$d/spool" "$d/state" "$d/tmp"
	# munged runs as munge and refuses directories it does not own; the path to them must be
	# searchable for it.
	local p=$d
	while [ "$p" != / ]; do
		chmod go+x "$p" 2>/dev/null || true
		p=$(dirname "$p")
	done
	chown munge:munge "$d/munge"
	chmod 711 "$d/munge"
	[ -s /etc/munge/munge.key ] || {
		echo "slurm-lib: /etc/munge/munge.key is missing (the munge package makes it)" >&2
		return 1
	}
	su -s /bin/sh munge -c "munged --socket=$d/munge/munge.socket --pid-file=$d/munge/munged.pid --log-file=$d/munge/munged.log --seed-file=$d/munge/munged.seed --num-threads=4" ||
		{
			echo "slurm-lib: munged did not start:" >&2
			cat "$d/munge/munged.log" >&2 2>/dev/null
			return 1
		}
	slurm_write_conf "$d"
	export SLURM_CONF=$d/slurm.conf
	if [ "$SLURM_ACCOUNTING" = 1 ]; then
		__slurm_db_start "$d" || return 1
		__slurm_dbd_start "$d" || return 1
	fi
	__slurm_start_daemons "$d"
}

# __slurm_start_daemons DIR: slurmctld and slurmd on DIR/slurm.conf; waits for the node.
__slurm_start_daemons() {
	local d=$1
	slurmctld -f "$SLURM_CONF" -L "$d/slurmctld.log" || {
		echo "slurm-lib: slurmctld did not start" >&2
		return 1
	}
	slurmd -f "$SLURM_CONF" -L "$d/slurmd.log" || {
		echo "slurm-lib: slurmd did not start" >&2
		return 1
	}
	if ! __slurm_wait 60 __slurm_node_idle; then
		echo "slurm-lib: the node did not become idle within 60 s; sinfo says:" >&2
		sinfo -N >&2 2>&1
		tail -n 20 "$d/slurmctld.log" "$d/slurmd.log" >&2
		return 1
	fi
	return 0
}

# __slurm_kill PIDFILE: SIGTERM the daemon named in PIDFILE, wait up to 20 s, then SIGKILL.
__slurm_kill() {
	local pid
	pid=$(__slurm_pid "$1")
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	local i
	for i in $(seq 1 200); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

# slurm_stop_ctld: stops only the controller (to test an unreachable scheduler).
slurm_stop_ctld() {
	__slurm_kill "$SLURM_DIR/slurmctld.pid"
}

# __slurm_acct_stop: stops slurmdbd and MariaDB, by PID.
__slurm_acct_stop() {
	__slurm_kill "$SLURM_DIR/slurmdbd.pid"
	__slurm_kill "$SLURM_DIR/db/mariadbd.pid"
}

# slurm_accounting_off: slurmctld and slurmd again on a slurm.conf without accounting, and
# slurmdbd and MariaDB stopped (every job must have ended: the controller's state is kept).
slurm_accounting_off() {
	__slurm_kill "$SLURM_DIR/slurmd.pid"
	__slurm_kill "$SLURM_DIR/slurmctld.pid"
	__slurm_acct_stop
	SLURM_ACCOUNTING=0
	slurm_write_conf "$SLURM_DIR"
	__slurm_start_daemons "$SLURM_DIR"
}

# slurm_stop: stops slurmd (and the job steps it runs), slurmctld, slurmdbd, MariaDB and
# munged, by PID.
slurm_stop() {
	[ -n "$SLURM_DIR" ] || return 0
	scancel -u "$(id -un)" >/dev/null 2>&1 || true
	__slurm_kill "$SLURM_DIR/slurmd.pid"
	__slurm_kill "$SLURM_DIR/slurmctld.pid"
	__slurm_acct_stop
	__slurm_kill "$SLURM_DIR/munge/munged.pid"
	# the job cgroups slurmd made under each controller are removed with it; remove leftovers
	local c
	for c in /sys/fs/cgroup/*/slurm_"$SLURM_NODE" /sys/fs/cgroup/*/slurm; do
		[ -d "$c" ] || continue
		find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
}
