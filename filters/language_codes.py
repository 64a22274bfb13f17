"""``canonical_language`` of every label the three identifiers can return and of every
ISO 639-1 code, worked out once with ``python-iso639`` (the rule is in
``filters/language.py``) and kept here, so that a worker does not import and load
the ISO 639 tables (about half a CPU second) to map the same few hundred codes.
``tests/filters/test_language_codes.py`` checks every entry against ``python-iso639``
and that the identifiers' labels are all here; a code not listed is mapped through
``python-iso639`` as before.

Entries are ``code:canonical``, or ``code`` alone where the code is its own canonical
form."""

from __future__ import annotations

_TABLE = (
    'aa ab abk:ab ace adz ae af afr:af aii:syr ak als:sq am ame amh:am amr an ar ara:ar arl arn arz:ar as '
    'asm:as ast av ay ayr:ay az azb:az aze:az ba bak:ba bar bcl:bik be bel:be ben:bn bg bh bi bm bn bo boa '
    'bod:bo bpy br bre:br bs:hbs bul:bg bxr:bua ca cat:ca cbk cbu cdo:zh ce ceb ces:cs ch che:ce chk cho chr '
    'chv:cv chy ckb:ku cmn:zh cnh co cor:kw cos:co cr cs cu cv cy cym:cy da dan:da de deu:de dik:din diq:zza '
    'div:dv dsb dty:ne dv dz ee el ell:el eml en eng:en eo epo:eo es est:et estvro et eu eus:eu ewe:ee ext fa '
    'fao:fo ff fi fij:fj fin:fi fini fink finl finm fino finp finr fins fint finx fj fo fon fr fra:fr frr '
    'fry:fy fy ga gaz:om gd gl gla:gd gle:ga glg:gl glv:gv gn gom:kok grn:gn gsw gu guj:gu gv ha hat:ht hbs '
    'hbsbos hbshrv hbssrp he heb:he hi hif hin:hi hmo:ho ho hr:hbs hsb ht hu hun:hu hus huu hy hye:hy hz ia '
    'ibo:ig id:ms ido:io ie ig ii ik iku:iu ilo ina:ia io is isl:is it ita:it iu izh ja jbo jpn:ja jv ka kac '
    'kal:kl kan:kn kat:ka kaz:kk kbd kbp kca kg khm:km ki kir:ky kj kk kl km kmr:ku kn knc:kr ko koi:kv '
    'kor:ko kpv:kv kr krc ks ksh ku kv kw ky la lao:lo lat:la lav:lv lb lez lg li lin:ln lit:lt liv lmo ln lo '
    'lrc lt ltz:lb lu lud lug:lg luo lus lv mai mal:ml mar:mr mcd mcf mdf mg mh mhr:chm mi min:ms mk mkd:mk '
    'ml mlg:mg mlt:mt mn mns mon:mn mr mri:mi mrj:chm ms msa:ms msaind msamalay msamin msazsm mt mwl my '
    'mya:my myv mzn na nah nap nav:nv nb:no nd nds ne nep:ne new ng nhn nio nl nld:nl nn:no nno:no no nob:no '
    'nr nso nus nv ny oc oci:oc oj olo om or ori:or os oss:os pa pag pam pan:pa pbt:ps pes:fa pfl pi pl '
    'pli:pi pms pnb:lah pol:pl pon por:pt ps pt qu que:qu rm rn ro roh:rm ron:ro ru rue rus:ru rw sa sag:sg '
    'sagb sah sat sc scn sco sd se sg sgs sh:hbs shk shn si sin:si sjd sjk sju sk sl slk:sk slv:sl sm sma '
    'sme:se smj smn sms sn sna:sn snd:sd so som:so sot:st spa:es sq sqi:sq sr:hbs srd:sc ss st su sv sw '
    'swa:sw swe:sv ta tam:ta tat:tt tca te tel:te tet tg tgk:tg tgl:tl th tha:th ti tir:ti tk tl tn to tr ts '
    'tso:ts tt tuk:tk tur:tr tw:ak twi:ak ty tyv tzh udm ug uig:ug uk ukr:uk und undhtml ur ura urd:ur uz '
    'uzn:uz ve vec vep vi vie:vi vls vo vol:vo vot wa war wln:wa wo wuu:zh xal xh xmf yi yid:yi yo yor:yo yrk '
    'yue:zh za zh zu zul:zu zxx '
    # CLD2's labels that are neither ISO 639-1 codes nor the other identifiers' labels
    'crs haw hmn kha lif mfe syr tlh zzp '
)

CANONICAL: dict[str, str] = {
    code: canonical or code for code, _, canonical in (entry.partition(":") for entry in _TABLE.split())
}
