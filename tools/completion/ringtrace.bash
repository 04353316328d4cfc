# SPDX-License-Identifier: GPL-2.0
# bash completion of ringtrace(1): installed as
# /usr/share/bash-completion/completions/ringtrace.
#
# Commands and options come from `ringtrace --help` and `ringtrace CMD
# --help` themselves, so that this file never lists them a second time;
# event names from the loaded module's available_events when readable.

_ringtrace_events()
{
	local f
	for f in /sys/kernel/debug/ringtrace/available_events \
		 /dev/ringtrace/available_events; do
		[[ -r $f ]] && { cut -d' ' -f2 "$f"; break; }
	done
	printf '%s\n' sched task irq softirq syscalls statedump marker all
}

_ringtrace()
{
	local cur prev words cword
	_init_completion || return

	local i cmd=
	for ((i = 1; i < cword; i++)); do
		if [[ ${words[i]} == -- ]]; then
			# record's command: complete it as a command line.
			_command_offset $((i + 1))
			return
		fi
		if [[ -z $cmd && ${words[i]} != -* ]]; then
			cmd=${words[i]}
		fi
	done

	if [[ -z $cmd ]]; then
		local cmds
		cmds=$("${words[0]}" --help 2>/dev/null |
			sed -n '/^Commands:/,/^$/s/^  \([a-z]\+\) .*/\1/p')
		COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
		return
	fi

	case $prev in
	-e | --events)
		local IFS=$'\n' prefix=
		[[ $cur == *,* ]] && prefix=${cur%,*},
		COMPREPLY=($(compgen -P "$prefix" -W "$(_ringtrace_events)" -- "${cur##*,}"))
		compopt -o nospace
		return
		;;
	-m | --mode)
		COMPREPLY=($(compgen -W "discard overwrite" -- "$cur"))
		return
		;;
	-f | --format)
		if [[ $cmd == export ]]; then
			COMPREPLY=($(compgen -W "systrace chrome-json lttng perfetto" -- "$cur"))
			return
		fi
		;;
	--ustack-mode)
		COMPREPLY=($(compgen -W "fp copy" -- "$cur"))
		return
		;;
	-o | --output | -d | --debugfs | --image)
		_filedir
		return
		;;
	--binaries)
		_filedir -d
		return
		;;
	-p | --pid | --tid | --pid=* | --cpu | -c | --cpus | -b | --buffer-size | \
	--duration | --level | --begin | --end | --comm | --ustack-size)
		return
		;;
	esac

	if [[ $cur == -* ]]; then
		local opts
		opts=$("${words[0]}" "$cmd" --help 2>/dev/null |
			grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,' | sort -u)
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return
	fi
	# Trace directories for the commands that read one.
	_filedir -d
} &&
	complete -F _ringtrace ringtrace
