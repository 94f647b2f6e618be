# muxgate shell integration for zsh: the .zshenv of a temporary ZDOTDIR a shell the gateway
# starts is given. It puts ZDOTDIR back (so zsh reads the user's own files, as a login shell),
# removes the temporary one, and marks prompts and commands with OSC 133 and the working
# directory with OSC 7. The user's files are not touched.
() {
    local own=$ZDOTDIR
    if [[ -n ${MUXGATE_ZDOTDIR_SET-} ]]; then
        ZDOTDIR=$MUXGATE_ZDOTDIR
    else
        unset ZDOTDIR
    fi
    unset MUXGATE_ZDOTDIR MUXGATE_ZDOTDIR_SET
    [[ $own == */muxgate-zsh.* ]] && rm -rf -- "$own"
}
[[ -r ${ZDOTDIR:-$HOME}/.zshenv ]] && source "${ZDOTDIR:-$HOME}/.zshenv"

if [[ -o interactive && -z ${__muxgate_marks-} ]]; then
    typeset -g __muxgate_marks=1 __muxgate_ran= __muxgate_sp=
    __muxgate_url() {
        emulate -L zsh
        setopt extendedglob no_multibyte
        local LC_ALL=C
        REPLY=${1//(#m)[^A-Za-z0-9\/._~-]/%${(l:2::0:)$(([##16]#MATCH))}}
    }
    # zsh draws its missing-newline mark (PROMPT_SP) before any precmd hook runs, which would
    # put it inside the command's output: with PROMPT_SP on, it is drawn here instead, after
    # the end mark, the way zsh draws it (on a terminal with automatic margins, as tmux's).
    __muxgate_eol_mark() {
        emulate -L zsh
        setopt extendedglob
        local shown=${(%)${PROMPT_EOL_MARK-%B%S%#%s%b}}
        local plain=${shown//$'\e'\[[0-9;?]#[@-~]/}
        local w=${#plain}
        (( w > COLUMNS )) && w=0
        print -rn -- "$shown${(l:COLUMNS-w:: :)${:-}}"$'\r'"${(l:w:: :)${:-}}"$'\r'
    }
    __muxgate_precmd() {
        local st=$?
        [[ -n $__muxgate_ran ]] && print -n "\e]133;D;$st\a"
        __muxgate_ran=
        if [[ -o prompt_sp && -o prompt_cr ]]; then
            unsetopt prompt_sp
            __muxgate_sp=1
        fi
        [[ -n ${__muxgate_sp-} && -o prompt_cr ]] && __muxgate_eol_mark
        __muxgate_url "$PWD"
        print -n "\e]7;file://${HOST}${REPLY}\a\e]133;A\a"
        return $st
    }
    __muxgate_preexec() {
        __muxgate_ran=1
        __muxgate_url "$1"
        print -n "\e]133;C;cmdline_url=${REPLY}\a"
    }
    autoload -Uz add-zsh-hook
    add-zsh-hook precmd __muxgate_precmd
    add-zsh-hook preexec __muxgate_preexec
fi
