# muxgate shell integration for fish: the --init-command of a shell the gateway starts (fish
# has read the user's files by then). It marks prompts and commands with OSC 133 and the
# working directory with OSC 7. fish 4 marks them itself and is left alone.
if not set -q __muxgate_marks; and string match -qr '^[0-3]\.' -- $version
    set -g __muxgate_marks 1
    function __muxgate_prompt --on-event fish_prompt
        printf '\e]7;file://%s%s\a\e]133;A\a' $hostname (string escape --style=url -- $PWD)
    end
    function __muxgate_preexec --on-event fish_preexec
        printf '\e]133;C;cmdline_url=%s\a' (string escape --style=url -- $argv[1])
    end
    function __muxgate_postexec --on-event fish_postexec
        printf '\e]133;D;%s\a' $status
    end
end
