"""``autojit inspect``, its reports and the LLVM/ptxas facts they print."""
