"""The models and data of zero_vs_deepspeed.py, the same for every engine: an MLP learning a fixed
random linear teacher's classes, or a GPT-style decoder learning next tokens of arithmetic
progressions. Functions take torch (imported by the worker, after its environment is set).
"""
CLASSES = 10
VOCABULARY, SEQUENCE = 512, 64     # the GPT-style model


def make_model(torch, width, layers):
    nn = torch.nn
    torch.manual_seed(0)
    modules = [nn.Linear(width // 4, width), nn.Tanh()]
    for _ in range(layers - 1):
        modules += [nn.Linear(width, width), nn.Tanh()]
    modules.append(nn.Linear(width, CLASSES))
    return nn.Sequential(*modules)


def make_gpt(torch, width, layers):
    """A GPT-style decoder: token and position embeddings, `layers` pre-norm blocks (causal
    attention through each block's own projections, a 4x MLP), a final norm and an LM head."""
    nn, F = torch.nn, torch.nn.functional
    heads = max(1, width // 64)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(attended.transpose(1, 2).reshape(b, t, width))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.positions = nn.Embedding(VOCABULARY, width), nn.Embedding(SEQUENCE, width)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, VOCABULARY)

        def forward(self, ids):
            x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    torch.manual_seed(0)
    return Gpt()


def gpt_batches(torch, steps, ranks, rank, micro_batch):
    """This rank's sequences of every step: arithmetic progressions of tokens (a random start and
    stride each), so the next token can be learned; inputs and the tokens that follow them."""
    generator = torch.Generator().manual_seed(5)
    result = []
    for step in range(steps):
        start = torch.randint(0, VOCABULARY, (micro_batch * ranks, 1), generator=generator)
        stride = torch.randint(1, 8, (micro_batch * ranks, 1), generator=generator)
        ids = ((start + stride * torch.arange(SEQUENCE + 1)) % VOCABULARY)[rank * micro_batch:(rank + 1) * micro_batch]
        result.append((ids[:, :-1].clone(), ids[:, 1:].clone()))
    return result


def batches(torch, steps, ranks, rank, micro_batch, width):
    """This rank's micro-batch of every step: slices of fixed global batches (inputs and labels from a
    fixed random linear teacher, so the loss falls)."""
    generator = torch.Generator().manual_seed(5)
    teacher = torch.randn(width // 4, CLASSES, generator=generator)
    result = []
    for step in range(steps):
        inputs = torch.randn(micro_batch * ranks, width // 4, generator=generator)
        labels = (inputs @ teacher).argmax(1)
        mine = slice(rank * micro_batch, (rank + 1) * micro_batch)
        result.append((inputs[mine].clone(), labels[mine].clone()))
    return result
