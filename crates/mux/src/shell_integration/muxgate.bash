# muxgate shell integration for bash: the --rcfile of a shell the gateway starts.
# It reads the files a login bash reads, then marks prompts and commands with OSC 133 and the
# working directory with OSC 7. The user's files are not touched.
[ -r /etc/profile ] && . /etc/profile
for __muxgate_file in ~/.bash_profile ~/.bash_login ~/.profile; do
    if [ -r "$__muxgate_file" ]; then
        . "$__muxgate_file"
        break
    fi
done
unset __muxgate_file

if [[ -z ${__muxgate_marks-} && ${BASH_VERSINFO[0]}${BASH_VERSINFO[1]} -ge 44 ]]; then
    __muxgate_marks=1
    __muxgate_url() {
        local LC_ALL=C s=$1 out= c i
        for ((i = 0; i < ${#s}; i++)); do
            c=${s:i:1}
            case $c in
            [A-Za-z0-9/._~-]) out+=$c ;;
            *) printf -v c '%%%02X' "'$c" && out+=$c ;;
            esac
        done
        REPLY=$out
    }
    # First in PROMPT_COMMAND: keeps the command's status, and gives it back to what follows.
    __muxgate_keep_status() {
        __muxgate_status=$?
        return "$__muxgate_status"
    }
    # Last in PROMPT_COMMAND: after anything that rebuilds PS1.
    __muxgate_prompt() {
        printf '\033]133;D;%s\007' "$__muxgate_status"
        __muxgate_url "$PWD"
        printf '\033]7;file://%s%s\007' "${HOSTNAME-}" "$REPLY"
        [[ $PS1 == *'133;A'* ]] || PS1='\[\033]133;A\007\]'$PS1
        [[ $PS1 == *'133;B'* ]] || PS1=$PS1'\[\033]133;B\007\]'
        return "$__muxgate_status"
    }
    [[ ${PS0-} == *'133;C'* ]] || PS0=${PS0-}'\033]133;C\007'
    if [[ ${BASH_VERSINFO[0]}${BASH_VERSINFO[1]} -ge 51 ]]; then
        PROMPT_COMMAND=(__muxgate_keep_status "${PROMPT_COMMAND[@]}" __muxgate_prompt)
    else
        PROMPT_COMMAND="__muxgate_keep_status;${PROMPT_COMMAND:+$PROMPT_COMMAND;}__muxgate_prompt"
    fi
fi

# The rcfile came through a pipe: its descriptor would otherwise stay open in every command.
case ${BASH_SOURCE[0]-} in
/dev/fd/[0-9]*) eval "exec ${BASH_SOURCE[0]#/dev/fd/}<&-" ;;
esac
