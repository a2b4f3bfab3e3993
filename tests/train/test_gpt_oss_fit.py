"""Training fit for gpt-oss, on a tiny RANDOMLY INITIALISED gpt-oss config (2 layers, 4 experts): nothing is
downloaded. Checked: --bf16 loads bfloat16 weights; LoRA reaches the attention projections and every expert."""

from __future__ import annotations

from pathlib import Path

import torch


def _tiny_gpt_oss():
    from transformers import GptOssConfig, GptOssForCausalLM

    config = GptOssConfig(
        vocab_size=256,
        hidden_size=32,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        num_local_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=128,
        sliding_window=32,
        layer_types=["sliding_attention", "full_attention"],
    )
    torch.manual_seed(0)
    return GptOssForCausalLM(config)


def _save_with_tokenizer(model, folder: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = Tokenizer(models.WordLevel({"<unk>": 0, "search": 1, "finish": 2}, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    model.save_pretrained(folder)
    PreTrainedTokenizerFast(tokenizer_object=words, eos_token="<unk>").save_pretrained(folder)
    return folder


def test_bf16_is_honoured_when_loading(tmp_path: Path) -> None:
    from sieve.train.llm.sft import load_student

    folder = _save_with_tokenizer(_tiny_gpt_oss(), tmp_path / "tiny-gpt-oss")
    model, _, _ = load_student(str(folder), bf16=True)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    model, _, _ = load_student(str(folder), bf16=False)
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_lora_reaches_the_experts_and_trains() -> None:
    from peft import get_peft_model

    from sieve.train.llm.sft import lora_config

    model = _tiny_gpt_oss()
    experts_before = model.model.layers[0].mlp.experts.gate_up_proj.detach().clone()
    peft_model = get_peft_model(model, lora_config(4, model))
    trainable = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    for part in ("q_proj", "k_proj", "v_proj", "o_proj", "experts"):
        assert any(part in n and "lora_" in n for n in trainable), part
    assert not any("router" in n for n in trainable)  # the router stays frozen
    ids = torch.randint(0, 256, (2, 16))
    optimiser = torch.optim.SGD([p for p in peft_model.parameters() if p.requires_grad], lr=0.5)
    losses = []
    for _ in range(3):
        loss = peft_model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0]  # the adapters learn
    merged = peft_model.merge_and_unload()
    assert not torch.equal(merged.model.layers[0].mlp.experts.gate_up_proj, experts_before)  # experts adapted
